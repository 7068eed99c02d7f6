"""The catalog example's one business error; its class name is the error name the workflow's Catch matches."""


class InvalidDocument(Exception):
    """The task input or the message body is not a product document; retrying cannot fix it.

    The message names the field and what to change, never the raw input (it would land in logs and alerts).
    """
