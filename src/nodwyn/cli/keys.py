"""``nodwyn keys set|list|rm NAME``: credentials in the keychain file.

The keychain is ``$NODWYN_KEYCHAIN``, else ``keychain.json`` beside config.toml (beside
``$NODWYN_CONFIG`` when that names it), mode 0600. A key's value is read from a hidden prompt on a
terminal or from stdin, never from the command line (it would land in the shell's history), and is
never printed.
"""

from __future__ import annotations

import os
import sys

import click

from nodwyn.compose import keychain_path, keychain_where, load_config
from nodwyn.errors import ConfigError, NotFoundError
from nodwyn.transport import Credentials, new_credential, origin_of, save_keychain


def _chain() -> Credentials:
    path = keychain_path(os.environ)
    return Credentials.from_keychain(path) if path.exists() else Credentials()


@click.group()
def keys() -> None:
    """Credentials in the keychain file (mode 0600), each bound to the origins it may reach."""


@keys.command("set")
@click.argument("name")
@click.option(
    "--origin",
    "origins",
    multiple=True,
    help="An origin the key may reach (repeat for more); default: the base_url of the models that name it.",
)
@click.option("--scope", "scopes", multiple=True, help="A scope the key was granted (repeat for more).")
@click.option(
    "--header",
    type=click.Choice(["authorization", "x-api-key"]),
    default=None,
    help="The header it goes in (default: the API's usual one).",
)
def set_(name: str, origins: tuple[str, ...], scopes: tuple[str, ...], header: str | None) -> None:
    """Store the key NAME (the name model entries give as credential); its value is asked for
    (hidden) on a terminal, or read from stdin."""
    env = os.environ
    tty = sys.stdin.isatty()
    wanted = list(origins)
    if not wanted:
        config = load_config(env)
        wanted = sorted(
            {origin_of(m.base_url) for m in config.models.values() if m.credential == name and m.base_url}
        )
    if not wanted and tty:
        typed = click.prompt(f"origins {name} may reach (URLs, space-separated)", err=True)
        wanted = typed.split()
    if not wanted:
        raise ConfigError(
            f"no origin for key {name!r}: no model entry names it as credential; "
            "pass --origin https://api.example.com"
        )
    chosen = list(scopes)
    if not chosen and tty:
        typed = click.prompt(
            "scopes (space-separated; Enter for none)", default="", show_default=False, err=True
        )
        chosen = typed.split()
    value = click.prompt(f"value of {name}", hide_input=True, err=True) if tty else sys.stdin.read()
    credential = new_credential(name, value.strip(), wanted, chosen, header)
    path = keychain_path(env)
    chain = _chain()
    save_keychain(path, chain.merged(Credentials.of([credential])))
    verb = "replaced" if name in chain.by_name else "added"
    click.echo(f"{verb} {name} (origins {', '.join(sorted(credential.origins))}) in {path} (mode 0600)")


@keys.command("list")
def list_() -> None:
    """The keychain's keys: name, origins, scopes, header (never the value)."""
    path = keychain_path(os.environ)
    if not path.exists():
        click.echo(f"no keychain at {keychain_where(os.environ)}; add a key with `nodwyn keys set NAME`")
        return
    chain = Credentials.from_keychain(path)
    click.echo(f"keychain {path}", err=True)
    for name, c in sorted(chain.by_name.items()):
        scopes = f"  scopes {' '.join(sorted(c.scopes))}" if c.scopes else ""
        header = f"  header {c.header}" if c.header else ""
        click.echo(f"{name:<24} {' '.join(sorted(c.origins))}{scopes}{header}")


@keys.command("rm")
@click.argument("name")
def rm(name: str) -> None:
    """Remove the key NAME from the keychain."""
    path = keychain_path(os.environ)
    chain = _chain()
    if name not in chain.by_name:
        known = ", ".join(sorted(chain.by_name)) or "none"
        raise NotFoundError(f"no key {name!r} in keychain {keychain_where(os.environ)} (keys: {known})")
    save_keychain(path, Credentials.of(c for n, c in chain.by_name.items() if n != name))
    click.echo(f"removed {name} from {path}")


@keys.command("seal")
def seal() -> None:
    """Create the keychain's session-seal secret: every session created from now on is sealed (a
    chained HMAC over its events), and `nodwyn verify SESSION` checks it. An existing secret is
    kept (sessions sealed with it would no longer verify)."""
    import secrets

    from nodwyn.transport import seal_secret

    path = keychain_path(os.environ)
    if seal_secret(path):
        click.echo(f"keychain {path} already holds a seal secret; sessions are sealed with it")
        return
    save_keychain(path, _chain(), seal=secrets.token_urlsafe(32))
    click.echo(f"added a seal secret to {path} (mode 0600); new sessions are sealed")
