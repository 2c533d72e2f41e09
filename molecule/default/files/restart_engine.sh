#!/bin/sh
# Restart the Docker engine the way this machine runs it: systemd's unit when there is one, else the dockerd
# process itself (stopped with SIGTERM, as `systemctl restart` would, then started again with the same command
# line). Returns once the engine answers again.
# `make test` runs the integration tests beside molecule; they hold GRPO_ENGINE_LOCK shared for as long as they use
# the engine, and the restart waits here until they are done (a condition, not a clock).
set -eu
lock=${GRPO_ENGINE_LOCK:-/var/tmp/grpo-engine.lock}
exec 9>"$lock"
flock -x 9
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet docker 2>/dev/null; then
    systemctl restart docker
else
    pid=$(pidof dockerd)
    # dockerd's own arguments, one per NUL-separated field (none contain spaces when started by hand or by CI)
    args=$(tr '\0' ' ' < "/proc/$pid/cmdline")
    log=$(readlink "/proc/$pid/fd/1" || echo /dev/null)
    case "$log" in /*) ;; *) log=/dev/null ;; esac
    kill -TERM "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.5; done
    # shellcheck disable=SC2086
    setsid $args >>"$log" 2>&1 < /dev/null 9>&- &
fi
i=0
until docker info >/dev/null 2>&1; do
    i=$((i + 1))
    if [ "$i" -gt 120 ]; then
        echo "the Docker engine did not answer within 60 s after the restart" >&2
        exit 1
    fi
    sleep 0.5
done
