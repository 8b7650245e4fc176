"""The exit codes of every `trnprof` command: one enum, so a CI script reads them the same way
everywhere."""

from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    FAILED = 1  # the command's verdict is "no": a finding at --fail-on, a --fail-if gate tripped,
    # a rule test case failed, reference pages differ under --check
    USAGE = 2  # a usage or input error, a damaged run, or a gate that could not judge the run
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
