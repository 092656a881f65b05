"""Values: pure, frozen data. Content parts, messages, the provider-neutral Request and Response,
the Recipe and its Policy, log events, and the canonical JSON form with its digest. No I/O."""
