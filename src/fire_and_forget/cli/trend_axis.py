"""The failure-trend page's one time axis: a UTC window, its buckets and its clock-time ticks, chosen from its length.

Every chart of a page is drawn on the same axis (same start, end, buckets and ticks). The tick step is the smallest
of STEPS that leaves at most MAX_TICKS ticks; it sets the labels' unit: seconds (HH:MM:SS) below a minute, minutes
and hours (HH:MM) below a day, days (MM-DD) above. A tick at midnight under a time-of-day unit shows its date. The
bucket width is the smallest step that leaves at most MAX_BUCKETS buckets, and buckets start on a multiple of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

MINUTE, HOUR, DAY = 60, 3600, 86400
# Round durations, in seconds, for tick steps and bucket widths.
STEPS = (1, 2, 5, 10, 15, 30, MINUTE, 2 * MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE,
         HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 7 * DAY, 14 * DAY, 28 * DAY)
MAX_TICKS = 8
MAX_BUCKETS = 40
SHORTEST_WINDOW = 10.0  # seconds: a window of one instant still gets an axis
# The labels' unit, by the tick step it applies below, and how a tick in that unit is labelled.
UNITS = ((MINUTE, "seconds"), (HOUR, "minutes"), (DAY, "hours"))
LABELS = {"seconds": "%H:%M:%S", "minutes": "%H:%M", "hours": "%H:%M", "days": "%m-%d"}


def utc(moment: datetime) -> datetime:
    """An aware UTC datetime (a naive one is taken to be UTC already)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def stamp(moment: datetime) -> str:
    """A full UTC time as the page prints the window's ends: 2026-12-01 16:04:36Z."""
    return utc(moment).strftime("%Y-%m-%d %H:%M:%SZ")


def _step(seconds: float, at_most: int) -> int:
    return next((step for step in STEPS if seconds / step <= at_most), STEPS[-1])


@dataclass(frozen=True)
class Tick:
    at: datetime
    label: str


@dataclass(frozen=True)
class Axis:
    """[start, end) in UTC, cut into buckets of `bucket_seconds` aligned on the epoch, with labelled ticks."""

    start: datetime
    end: datetime
    bucket_seconds: int
    tick_seconds: int
    unit: str  # what the tick labels count in: seconds, minutes, hours or days

    @property
    def first_bucket(self) -> datetime:
        epoch = self.start.timestamp()
        return datetime.fromtimestamp(epoch - epoch % self.bucket_seconds, UTC)

    @property
    def buckets(self) -> int:
        span = self.end.timestamp() - self.first_bucket.timestamp()
        return max(1, -int(-span // self.bucket_seconds))  # ceiling

    def bucket_of(self, moment: datetime) -> int:
        """The bucket a moment falls in; moments outside the window are held to its first or last bucket."""
        index = int((utc(moment).timestamp() - self.first_bucket.timestamp()) // self.bucket_seconds)
        return min(max(index, 0), self.buckets - 1)

    def bucket_start(self, index: int) -> datetime:
        return self.first_bucket + timedelta(seconds=index * self.bucket_seconds)

    def fraction(self, moment: datetime) -> float:
        """Where a moment lies across the drawn buckets, 0 at the first bucket's start, 1 at the last one's end."""
        origin = self.first_bucket.timestamp()
        return (utc(moment).timestamp() - origin) / (self.buckets * self.bucket_seconds)

    def ticks(self) -> list[Tick]:
        epoch = self.first_bucket.timestamp()
        at = epoch - epoch % self.tick_seconds
        if at < epoch:
            at += self.tick_seconds
        last = self.bucket_start(self.buckets).timestamp()
        found = []
        while at <= last:
            moment = datetime.fromtimestamp(at, UTC)
            found.append(Tick(moment, self.label(moment)))
            at += self.tick_seconds
        return found

    def label(self, moment: datetime) -> str:
        """A tick's clock time in the axis's unit; midnight shows its date instead."""
        midnight = moment.hour == moment.minute == moment.second == 0
        return moment.strftime(LABELS["days"] if midnight else LABELS[self.unit])


def axis(start: datetime, end: datetime) -> Axis:
    """The axis of a window: its unit, bucket width and tick step follow from its length."""
    start, end = utc(start), utc(end)
    if (end - start).total_seconds() < SHORTEST_WINDOW:
        end = start + timedelta(seconds=SHORTEST_WINDOW)
    seconds = (end - start).total_seconds()
    tick = _step(seconds, MAX_TICKS)
    unit = next((name for limit, name in UNITS if tick < limit), "days")
    return Axis(start, end, _step(seconds, MAX_BUCKETS), tick, unit)
