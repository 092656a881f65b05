"""The cache at a glance: per request, cached against uncached prompt tokens as a bar (trim
points marked), and the session's token cache rate, tokens, cost and context fill against the
water marks. Figures come from ``stats.totals.Aggregator`` fed the events the app reads anyway;
nothing here computes a rate or a cost of its own."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from nodwyn.stats import Aggregator, RequestRow, percent
from nodwyn.values.events import LLM_REQ, Event, LlmReq, decoded
from nodwyn.values.recipe import WindowLimits

BAR = 20  # cells of a request's bar


def _k(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 10_000 else f"{n:,}"


def request_bar(row: RequestRow, width: int = BAR) -> Text:
    """``█`` cached, ``░`` uncached (glyphs, so it reads without colour); ``?`` when the reply
    reported no cache read, ``…`` while the reply is awaited."""
    u = row.usage
    if row.resp is None or u is None:
        return Text("…".ljust(width), style="dim")
    if u.prompt_tokens is None or u.cached_tokens is None or u.prompt_tokens <= 0:
        return Text("?".ljust(width), style="dim")
    cached = min(width, round(width * u.cached_tokens / u.prompt_tokens))
    bar = Text()
    bar.append("█" * cached, style="green")
    bar.append("░" * (width - cached), style="red")
    return bar


def fill_bar(estimate: int, limits: WindowLimits, width: int = BAR) -> Text:
    """The last request's estimate against the high water mark, the low water mark as ``|``."""
    high = max(limits.high_water, 1)
    used = min(width, round(width * estimate / high))
    low = min(width - 1, round(width * limits.low_water / high))
    cells = ["▓" if i < used else "·" for i in range(width)]
    if cells[low] == "·":
        cells[low] = "|"
    style = "red" if estimate >= limits.high_water else ("yellow" if estimate >= limits.low_water else "")
    return Text("".join(cells), style=style)


class CachePanel(Static):
    """Fed events in seq order (``feed``); ``refresh_figures`` redraws from the aggregator."""

    DEFAULT_CSS = """
    CachePanel { width: 38; height: 1fr; border-left: solid $primary-darken-2; padding: 0 1; }
    CachePanel.bottom { width: 1fr; height: 6; border-left: none; border-top: solid $primary-darken-2; }
    """

    def __init__(self, limits: WindowLimits, since: int, **kw: object) -> None:
        super().__init__("", **kw)  # type: ignore[arg-type]
        self.agg = Aggregator()
        self.limits = limits
        self.since = since  # the first seq aggregated
        self.estimate = 0
        self.priced = False  # the model in use has prices (app._status keeps it; unknown until open)

    def reset(self, limits: WindowLimits, since: int) -> None:
        self.agg = Aggregator()
        self.limits, self.since, self.estimate = limits, since, 0

    def adopt(self, agg: Aggregator, limits: WindowLimits) -> None:
        """The whole session's figures, counted off the screen's thread; events it has not seen
        yet are fed after (an aggregator ignores those it has)."""
        self.agg, self.limits, self.since = agg, limits, 1
        self.refresh_figures()

    def feed(self, events: list[Event] | tuple[Event, ...]) -> None:
        for event in events:
            self.agg.feed(event)
            req = decoded(event, LLM_REQ)
            if isinstance(req, LlmReq):
                self.estimate = req.estimate
        self.refresh_figures()

    def figures(self) -> Text:
        """The session's figures: six lines beside the conversation, two below it."""
        s = self.agg.totals().all
        if (s.replies and s.cost_unknown == s.replies) or (not s.replies and not self.priced):
            cost = "cost unknown"  # as the CLI says it: never $0.0000 for a model without prices
        elif s.cost_unknown:
            cost = f"cost ≥ ${s.cost_usd:.4f} ({s.cost_unknown} unpriced)"
        else:
            cost = f"cost ${s.cost_usd:.4f}"
        since = f"since seq {self.since}" if self.since > 1 else "whole session"
        fill = fill_bar(self.estimate, self.limits, 12)
        fill.append(f" {_k(self.estimate)}/{_k(self.limits.high_water)}", style="dim")
        out = Text()
        if self.has_class("bottom"):
            out.append(f"cache {percent(s.cache_rate)}", style="bold")
            out.append(f" · prompt {_k(s.prompt_tokens)} · cached {_k(s.cached_tokens)}")
            out.append(f" · out {_k(s.output_tokens)} · {since}\n", style="dim")
            out.append(f"{s.requests} requests · {cost} · fill ")
            out.append_text(fill)
            out.append("\n")
            return out
        out.append("cache", style="bold")
        out.append(f"  {since}\n", style="dim")
        out.append(f"token cache rate {percent(s.cache_rate)}\n")
        out.append(f"prompt {_k(s.prompt_tokens)} · cached {_k(s.cached_tokens)}\n")
        out.append(f"output {_k(s.output_tokens)} · requests {s.requests}\n")
        out.append(cost + "\n")
        out.append("fill ")
        out.append_text(fill)
        out.append("\n")
        return out

    def rows_text(self, height: int) -> Text:
        rows = self.agg.rows[-max(height, 1) :]
        out = Text()
        for row in rows:
            mark = "✂" if row.trim else " "
            out.append(f"{row.seq:>6}{mark}", style="bold" if row.trim else "dim")
            out.append_text(
                request_bar(row, max(self.size.width - 14, 8) if self.has_class("bottom") else BAR)
            )
            rate = row.rate
            out.append(f" {percent(rate) if rate is not None else '':>4}\n", style="dim")
        return out

    def on_resize(self) -> None:
        self.refresh_figures()

    def refresh_figures(self) -> None:
        figures = self.figures()
        bottom = self.has_class("bottom")
        room = max((self.size.height or 24) - len(figures.plain.splitlines()) - (1 if bottom else 2), 1)
        text = Text()
        text.append_text(figures)
        if not bottom:
            text.append("\n")
        text.append_text(self.rows_text(room))
        self.update(text)
