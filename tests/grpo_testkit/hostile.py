"""Values a user could write that must never become code: each holds MARK, so a test sees whether it ran."""

MARK = "PWNED"
HOSTILE = [
    "a\n%s x" % MARK, "a\r%s" % MARK, "x; touch /tmp/%s #" % MARK, "$(touch /tmp/%s)" % MARK, "`%s`" % MARK,
    "it's %s" % MARK, 'say "%s"' % MARK, "%s && rm -rf /" % MARK, "a|%s" % MARK, "../../%s" % MARK,
    "--%s=1" % MARK, "%s\t\x00\x1b[31m" % MARK, "ünïcødé %s 模型" % MARK, MARK + "x" * 5000, "${%s}" % MARK,
    "a\\\n%s" % MARK, "*%s?" % MARK, "%s >/tmp/x 2>&1 <&0" % MARK,
]
