"""The progress a waiting task reports reaches the console on each retry, through a real ansible-playbook run."""

import sys
import textwrap

from conftest import playbook


def test_a_retried_wait_shows_the_jobs_progress(tmp_path):
    book = tmp_path / "wait.yml"
    book.write_text(textwrap.dedent("""\
        - hosts: localhost
          connection: local
          gather_facts: false
          tasks:
            - grpo_job:
                name: counter
                state_dir: %(state)s
                state: started
                command: [sh, -c, "for i in 1 2 3 4 5 6 7 8; do echo step $i of 8; sleep 0.5; done"]
            - grpo_job:
                name: counter
                state_dir: %(state)s
                wait: 0.5
              register: job
              until: not job.running
              retries: 30
              delay: 0
            - ansible.builtin.assert:
                that: job.state == 'finished' and job.exit_status == 0 and job.progress == 'step 8 of 8'
        """ % {"state": tmp_path / "jobs"}))
    result = playbook(str(book), "-i", "localhost,", "-e", "ansible_python_interpreter=" + sys.executable)
    assert result.returncode == 0, result.stdout[-3000:]
    shown = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("[localhost] step")]
    # several distinct progress lines, in order, between the retries
    assert len(set(shown)) >= 2 and shown == sorted(shown), result.stdout
