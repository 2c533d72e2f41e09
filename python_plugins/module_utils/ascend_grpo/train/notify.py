"""Tell the user about a training run: one message to a webhook when it finishes, fails (with the triage line) or
its lease is about to end.

The run is a detached job and the controller is gone when it ends, so the run itself sends: its script
(roles/grpo_train/templates/run_grpo.sh.j2) calls this module's CLI after verl returns, and starts a sleeper for
the lease warning beside verl (``python -m ascend_grpo.train.notify --config FILE ended|lease|test``, with the
package's files installed in the workspace by roles/grpo_common/tasks/host_lib.yml).

- The URL is a secret (a chat webhook's path or query is its token): it comes from the environment only
  (``GRPO_NOTIFY_URL``, as the wandb key reaches the run), never from an argument or the config file, and every
  line this module prints shows it as ``scheme://host/***`` (:func:`ascend_grpo.common.secrets.scrub`).
- The config (``--config``, written by the train stage: ``notify.json`` in the run folder) holds no secret: the
  format, the lease's lead time, the folders, the inventory words every printed command carries, the failure
  catalogue, the setting names a fix names.
- The body is one of four shapes (:func:`payload`), picked by the format setting or, with ``auto``, by the URL's
  host (:func:`choose_format`).
- A notification that cannot be sent is logged and changes nothing else: the CLI always exits 0 for ``ended`` and
  ``lease`` (the run's exit status is the script's own), 1 for ``test`` so the stage can say it failed.
- A proxy the site set (``grpo_proxy``) reaches this process as ``GRPO_NOTIFY_PROXY`` (JSON, in the environment: a
  proxy URL may hold a password), applied to this process only; the run's own environment is left as it is.

Standard library only: it runs in the training environment.
"""

import argparse
import json
import os
import socket
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from urllib.parse import urlsplit

from ..common import errors, proxy, rerun, secrets, workspace
from . import run_log, run_status, triage

URL_ENV = "GRPO_NOTIFY_URL"
PROXY_ENV = "GRPO_NOTIFY_PROXY"
LEASE_ENV = "MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP"
FORMATS = ("auto", "slack", "feishu", "dingtalk", "json")
# auto: the hosts each vendor's incoming webhooks are served from; any other host gets the plain JSON
_HOSTS = {"hooks.slack.com": "slack", "open.feishu.cn": "feishu", "open.larksuite.com": "feishu",
          "oapi.dingtalk.com": "dingtalk"}
TIMEOUT_S = 10
ATTEMPTS = 3
BACKOFF_S = (2, 5)
# the sleeper looks whether its run still goes this often while it waits for the warning's time
POLL_S = 15


def choose_format(fmt, url):
    """The body's shape: ``fmt`` unless it is ``auto``, then the one the URL's host serves (json for another)."""
    if fmt and fmt != "auto":
        if fmt not in FORMATS:
            raise ValueError("format %r is not one of %s" % (fmt, ", ".join(FORMATS)))
        return fmt
    try:
        host = (urlsplit(url or "").hostname or "").lower()
    except ValueError:
        host = ""
    return _HOSTS.get(host, "json")


def payload(fmt, text, facts=None):
    """The request body for a message ``text`` in shape ``fmt`` (not ``auto``); ``facts`` are the plain JSON's fields.

    The shapes, from each vendor's documentation of its incoming webhook's text message:
    - Slack, "Sending messages using incoming webhooks" (https://api.slack.com/messaging/webhooks):
      ``{"text": "..."}``;
    - Feishu and Lark, custom bot, "send text message" (https://open.feishu.cn/document/client-docs/bot-v3/
      add-custom-bot, https://open.larksuite.com/document/client-docs/bot-v3/add-custom-bot):
      ``{"msg_type": "text", "content": {"text": "..."}}``;
    - DingTalk, custom robot, text type (https://open.dingtalk.com/document/orgapp/custom-robots-send-group-messages):
      ``{"msgtype": "text", "text": {"content": "..."}}``;
    - json: ours, for a receiver of one's own: the facts (event, host, workspace, run, step, status, triage, ...)
      with the text as ``text``.
    """
    if fmt == "slack":
        return {"text": text}
    if fmt == "feishu":
        return {"msg_type": "text", "content": {"text": text}}
    if fmt == "dingtalk":
        return {"msgtype": "text", "text": {"content": text}}
    if fmt == "json":
        return dict(facts or {}, text=text)
    raise ValueError("format %r has no body (one of %s)" % (fmt, ", ".join(FORMATS[1:])))


def _vendor_refusal(body):
    """Feishu and DingTalk answer HTTP 200 with an error code in the body (a keyword the bot requires, a signature
    it wants, a rate limit): their ``code`` / ``errcode`` other than 0, as text; None when the body says nothing."""
    try:
        answer = json.loads(body.decode("utf-8", errors="replace") or "null")
    except ValueError:
        return None
    if not isinstance(answer, dict):
        return None
    for code, words in (("code", "msg"), ("errcode", "errmsg"), ("StatusCode", "StatusMessage")):
        if answer.get(code) not in (None, 0, "0"):
            return "the service refused it: %s %s (%s)" % (code, answer.get(code), answer.get(words, ""))
    return None


def send(url, body, opener=None, timeout=TIMEOUT_S, attempts=ATTEMPTS, sleep=time.sleep):
    """POST ``body`` (JSON) to ``url``: up to ``attempts`` tries on a network error, a time-out, HTTP 429 or 5xx,
    ``timeout`` seconds each. Returns ``(delivered, what happened)``; the text never holds the URL (it shows as
    ``scheme://host/***``)."""
    opener = opener or urllib.request.build_opener()
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    what = "not sent"
    for attempt in range(1, attempts + 1):
        request = urllib.request.Request(url, data=data, method="POST",
                                         headers={"Content-Type": "application/json; charset=utf-8",
                                                  "User-Agent": "ascend-grpo-notify"})
        retry = False
        try:
            with opener.open(request, timeout=timeout) as response:
                answer = response.read(65536)
                refusal = _vendor_refusal(answer)
                if refusal is None:
                    return True, "delivered to %s (HTTP %s)" % (secrets.mask_endpoint(url), response.status)
                what = refusal
        except urllib.error.HTTPError as err:
            what = "HTTP %s %s" % (err.code, err.reason)
            retry = err.code == 429 or err.code >= 500
        except (urllib.error.URLError, OSError, ValueError) as err:
            what = "%s" % (getattr(err, "reason", None) or err)
            retry = not isinstance(err, ValueError)
        if not retry or attempt == attempts:
            break
        sleep(BACKOFF_S[min(attempt - 1, len(BACKOFF_S) - 1)])
    return False, secrets.scrub("not delivered to %s after %d attempt%s: %s" % (
        secrets.mask_endpoint(url), attempt, "" if attempt == 1 else "s", what), url)


def _when(epoch):
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _duration(seconds):
    if seconds is None:
        return "-"
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    return "%dh%02dm" % (hours, rest // 60) if hours else "%dm%02ds" % divmod(rest, 60)


def facts(config, event, exit_status=None, started=None, now=None, lease_end=None):
    """What the message says, as data (the plain JSON's fields): the run's step, newest checkpoint, elapsed time,
    and for a failure the catalogue's verdict. ``config``: the config file's mapping."""
    now = time.time() if now is None else now
    run_dir, checkpoint_dir = config["run_dir"], config["checkpoint_dir"]
    out = {"event": event, "host": config.get("host") or socket.gethostname(), "workspace": config.get("workspace"),
           "run": config.get("run") or os.path.basename(run_dir.rstrip("/")), "run_dir": run_dir,
           "status": {"ended": "finished" if exit_status == 0 else "failed", "lease": "running",
                      "test": "test"}[event],
           "exit_status": exit_status, "time": now, "elapsed_s": (now - started) if started else None,
           "log": os.path.join(run_dir, "logs", "latest.log")}
    if event == "test":
        return out
    text, parsed, history = run_status.read_history(run_dir) if os.path.isdir(run_dir) else ("", {}, {"steps": []})
    steps = history.get("steps") or []
    out["step"] = steps[-1]["step"] if steps else None
    out["total_steps"] = parsed.get("total_steps")
    saved = run_status.checkpoints(checkpoint_dir)["saved"] if os.path.isdir(checkpoint_dir) else []
    out["checkpoint"] = saved[-1] if saved else None
    out["checkpoint_dir"] = checkpoint_dir
    if event == "lease":
        out["lease_end"] = lease_end
        out["lease_left_s"] = (lease_end - now) if lease_end else None
    if out["status"] == "failed":
        out["error"] = secrets.mask_url(secrets.printable(run_log_error(parsed, exit_status, saved), newlines=False))
        if config.get("triage"):
            values, _problem = run_status.spec_values(config.get("records_dir"), config.get("inventory") or "",
                                                      run_dir)
            why = triage.diagnose(text, triage.validate(config["triage"]), exit_status, None, values,
                                  inventory=config.get("inventory") or "")
            why = errors.name_fields(why, config.get("setting_names") or {})
            out["triage"] = {key: why.get(key) for key in ("id", "cause", "fix", "setting", "line", "evidence")}
    return out


def run_log_error(parsed, exit_status, saved):
    """Why the run ended, as the status says it (run_log.why_it_ended)."""
    return run_log.why_it_ended(exit_status, parsed.get("error"), None, saved)


def triage_line(why):
    """The catalogue's verdict on one line: ``Why: <cause> Fix: <fix> (<setting>)``."""
    if not why:
        return ""
    return "Why: %s Fix: %s%s" % (why["cause"], why["fix"], " (%s)" % why["setting"] if why.get("setting") else "")


def message(f, inventory=""):
    """The text a person reads for the facts ``f`` (:func:`facts`); the commands it names carry ``inventory``."""
    where = "%s on %s" % (f["run"], f["host"])
    step = "step %s/%s" % (f.get("step") if f.get("step") is not None else "-", f.get("total_steps") or "?")
    checkpoint = ("newest checkpoint global_step_%s in %s" % (f["checkpoint"], f["checkpoint_dir"])
                  if f.get("checkpoint") is not None else "no checkpoint saved yet")
    if f["event"] == "test":
        return ("ascend-grpo: a test from %s: this channel gets a message when the run finishes, fails or its lease "
                "is about to end." % where)
    if f["event"] == "lease":
        return ("ascend-grpo: the lease of %s ends at %s (in %s), and the run still goes at %s; %s. verl saves "
                "before the end when the lease margin allows; see how it goes: %s" % (
                    where, _when(f.get("lease_end")), _duration(f.get("lease_left_s")), step, checkpoint,
                    rerun.command("status", inventory)))
    if f["status"] == "finished":
        return ("ascend-grpo: the run %s finished at %s after %s; %s. Next, evaluate it: %s" % (
            where, step, _duration(f.get("elapsed_s")), checkpoint, rerun.command("eval", inventory)))
    lines = ["ascend-grpo: the run %s FAILED (exit status %s) at %s after %s: %s" % (
        where, f.get("exit_status"), step, _duration(f.get("elapsed_s")), f.get("error") or "see the log")]
    if f.get("triage"):
        lines.append(triage_line(f["triage"]))
    lines.append("Log: %s; %s. Status: %s" % (f["log"], checkpoint, rerun.command("status", inventory)))
    return "\n".join(lines)


def notify(config, event, url, exit_status=None, started=None, now=None, lease_end=None, opener=None,
           sleep=time.sleep):
    """Build and send one message; ``(delivered, the line to log)``. Any error is caught: a run's end is never
    changed by its notification."""
    try:
        fmt = choose_format(config.get("format") or "auto", url)
        found = facts(config, event, exit_status, started, now, lease_end)
        text = message(found, config.get("inventory") or "")
        with proxy.proxy_environ(config.get("proxy") or {}):
            delivered, what = send(url, payload(fmt, text, found), opener=opener, sleep=sleep)
        return delivered, "%s message (%s): %s" % (event, fmt, what)
    except Exception as err:  # noqa: BLE001 - a notification must never end the run's script with a traceback
        return False, secrets.scrub("%s message not sent: %s: %s" % (event, type(err).__name__, err), url)


def lease_deadline(lease_end, lead_s):
    """When the warning goes: ``lead_s`` seconds before the lease's end (epoch seconds)."""
    return float(lease_end) - float(lead_s)


def wait_for_lease(lease_end, lead_s, parent, clock=time.time, sleep=time.sleep, getppid=os.getppid):
    """Sleep until the warning's time, looking every :data:`POLL_S` seconds whether the run script (``parent``)
    still goes. True when the time came with the run going; False when the run ended first (this process was
    handed to another parent) or the lease already ended."""
    at = lease_deadline(lease_end, lead_s)
    while True:
        if getppid() != parent:
            return False
        left = at - clock()
        if left <= 0:
            return clock() < float(lease_end)
        sleep(min(POLL_S, left))


def _log(line, url):
    print("[notify %s] %s" % (workspace.now_iso(), secrets.scrub(line, url)), flush=True)


def main(argv=None, environ=None, opener=None):
    """The CLI: ``--config FILE ended --exit-status N [--started EPOCH]``, ``lease``, ``test``."""
    environ = os.environ if environ is None else environ
    parser = argparse.ArgumentParser(prog="python -m ascend_grpo.train.notify")
    parser.add_argument("--config", required=True)
    sub = parser.add_subparsers(dest="event", required=True)
    ended = sub.add_parser("ended")
    ended.add_argument("--exit-status", type=int, required=True)
    ended.add_argument("--started", type=float)
    sub.add_parser("lease")
    sub.add_parser("test")
    args = parser.parse_args(argv)
    url = environ.get(URL_ENV, "")
    if not url:
        return 0 if args.event != "test" else 1
    try:
        with open(args.config, encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError) as err:
        _log("%s message not sent: the config %s cannot be read: %s" % (args.event, args.config, err), url)
        return 0 if args.event != "test" else 1
    if environ.get(PROXY_ENV):
        try:
            config["proxy"] = json.loads(environ[PROXY_ENV])
        except ValueError:
            _log("the proxy (%s) is no JSON: sending without it" % PROXY_ENV, url)
    if args.event == "lease":
        try:
            lease_end = float(environ.get(LEASE_ENV, ""))
        except ValueError:
            return 0  # no lease: nothing to warn of
        if not wait_for_lease(lease_end, config.get("lease_lead_s", 1800), os.getppid()):
            return 0
        _delivered, line = notify(config, "lease", url, lease_end=lease_end, opener=opener)
        _log(line, url)
        return 0
    if args.event == "ended" and os.path.exists(os.path.join(environ.get("GRPO_JOB_DIR") or "/nonexistent",
                                                             "stopped")):
        return 0  # stopped on request (the stage's stop action): the user knows
    delivered, line = notify(config, args.event, url, exit_status=getattr(args, "exit_status", None),
                             started=getattr(args, "started", None), opener=opener)
    _log(line, url)
    return 0 if delivered or args.event != "test" else 1


if __name__ == "__main__":
    sys.exit(main())
