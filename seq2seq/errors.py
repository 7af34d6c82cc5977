"""The one exception type for user mistakes (bad arguments, files, configs, checkpoints).

It subclasses ValueError so library callers can catch it the usual way; the CLIs print its
one-line message without a traceback and exit non-zero.
"""


class UserError(ValueError):
    """A mistake the user can fix; the message names the problem and the fix in one line."""
