"""One exception tree for nodwyn. Every message says what went wrong, where, and how to fix it.

    NodwynError                      exit 1
    ├── ConfigError                  exit 2   a config file, model entry or option is invalid
    ├── NotFoundError                exit 3   a session, seq, file or model does not exist
    ├── LockedError                  exit 4   another live process holds the session's log lock
    ├── CorruptLogError              exit 5   a log line, index or event is malformed (names seq/offset)
    ├── ReplayError                           exact replay refused
    │   ├── DigestMismatchError      exit 6
    │   ├── LegacyRequestError       exit 7   a request without recipe or digest
    │   └── UnknownRecipeError       exit 8   an algorithm version we do not know
    ├── CanonicalError               exit 9   a value has no canonical JSON form (e.g. a float)
    ├── OriginError                  exit 10  a credential, block or image would reach another origin
    ├── ToolError                    exit 11  a tool call was invalid or failed (the model is told)
    ├── ProviderError                exit 12  the provider failed: status, provider, message, field
    │   ├── AuthError
    │   ├── RateLimitError           (retryable)
    │   ├── ContextLengthError
    │   ├── ProviderUnavailable      (retryable)
    │   └── DecodeError              the provider's reply could not be parsed
    ├── EncodeError                  exit 13  a request cannot be represented in a dialect
    ├── StorageError                 exit 14  the disk refused: full, read-only, unreadable, not a folder
    ├── ImportFormatError            exit 15  another agent's session file is not in the format read
    ├── ExportError                  exit 16  an OTLP collector refused an export or could not be reached
    ├── TooLargeError                exit 20  a task, piped input or request does not fit the model's context
    └── WhatifError                  exit 1   a what-if replay could not be made (names the run)

The CLI maps these to exit codes in one place (``nodwyn.cli``); the library never exits. A turn
of ``nodwyn run`` that ends without a whole answer is no error: it exits 17-19
(``agent.settings.STOPPED_EXIT``). Every code is listed in docs/exit-codes.md.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any, ClassVar


class NodwynError(Exception):
    """Root of every error nodwyn raises on purpose. A subclass names its exit code as a class
    keyword (``class ConfigError(NodwynError, exit_code=2)``), or inherits its parent's."""

    exit_code: ClassVar[int] = 1

    def __init_subclass__(cls, exit_code: int | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if exit_code is not None:
            cls.exit_code = exit_code


class ConfigError(NodwynError, exit_code=2): ...


class NotFoundError(NodwynError, exit_code=3): ...


class LockedError(NodwynError, exit_code=4): ...


class CorruptLogError(NodwynError, exit_code=5): ...


class ReplayError(NodwynError, exit_code=6): ...


class DigestMismatchError(ReplayError, exit_code=6): ...


class LegacyRequestError(ReplayError, exit_code=7): ...


class UnknownRecipeError(ReplayError, exit_code=8): ...


class CanonicalError(NodwynError, ValueError, exit_code=9): ...


class OriginError(NodwynError, exit_code=10): ...


class ToolError(NodwynError, exit_code=11): ...


class ProviderError(NodwynError, exit_code=12):
    """The provider failed. Carries the evidence: status, provider, its message and the field."""

    retryable = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider: str | None = None,
        field: str | None = None,
        body: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.provider = provider
        self.field = field
        self.body = body
        self.retry_after = retry_after


class AuthError(ProviderError): ...


class RateLimitError(ProviderError):
    retryable = True


class ContextLengthError(ProviderError): ...


class ProviderUnavailable(ProviderError):
    retryable = True


class DecodeError(ProviderError): ...


class EncodeError(NodwynError, exit_code=13): ...


class StorageError(NodwynError, exit_code=14):
    """The file system refused a read or write of nodwyn's data (the log stays as it was)."""


class ImportFormatError(NodwynError, exit_code=15):
    """Another agent's session file is not in the format its loader reads (names file, line, field)."""


class ExportError(NodwynError, exit_code=16):
    """``nodwyn export`` could not deliver what it made: the OTLP collector refused it or could not
    be reached (the message names the URL). Not a provider's failure: no model was asked."""


class TooLargeError(NodwynError, exit_code=20):
    """A task, piped input or request is larger than the model's window or context, refused before
    it is recorded or sent (ADR 0300): the message names its size and what to do instead."""


class WhatifError(NodwynError):
    """A what-if replay (``nodwyn.whatif``) could not be made; the message names the run."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``; did you mean 'glm'?`` for the closest known name, or nothing: the tail of a message
    that names something unknown."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
