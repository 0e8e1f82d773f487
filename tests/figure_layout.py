"""Layout checks for figures, from matplotlib's own geometry: no text overlaps another text,
no axis label, tick label, title or legend lies over an axes, nothing leaves the figure, and a
value label never crosses an error bar."""

from __future__ import annotations

from itertools import combinations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.text import Text
from matplotlib.transforms import Bbox

SLACK = 1.0  # pixels two boxes may share before they count as overlapping


def _overlap(a: Bbox, b: Bbox) -> bool:
    return min(a.x1, b.x1) - max(a.x0, b.x0) > SLACK and min(a.y1, b.y1) - max(a.y0, b.y0) > SLACK


def _inside(box: Bbox, outer: Bbox) -> bool:
    return (
        box.x0 >= outer.x0 - SLACK
        and box.y0 >= outer.y0 - SLACK
        and box.x1 <= outer.x1 + SLACK
        and box.y1 <= outer.y1 + SLACK
    )


def _texts(fig: Figure) -> list[Text]:
    """Every visible, non-empty text that is drawn, each once: tick labels of ticks outside
    an axis's view are kept by matplotlib but never drawn."""
    hidden = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            span = (high - low) * 1e-9
            for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
                if not low - span <= tick.get_loc() <= high + span:
                    hidden |= {tick.label1, tick.label2}
    found = [
        t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and t not in hidden
    ]
    return list(dict.fromkeys(found))


def layout_problems(fig: Figure) -> list[str]:
    """What overlaps in ``fig`` once drawn, in words (empty: the layout is clean)."""
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    texts = _texts(fig)
    boxes = {t: t.get_window_extent(renderer) for t in texts}
    axes = [ax for ax in fig.axes if ax.get_visible()]
    areas = {ax: ax.get_window_extent(renderer) for ax in axes}
    problems = []
    for a, b in combinations(texts, 2):
        if _overlap(boxes[a], boxes[b]):
            problems.append(f"text {a.get_text()!r} overlaps text {b.get_text()!r}")
    for text in texts:
        if not _inside(boxes[text], fig.bbox):
            problems.append(f"text {text.get_text()!r} runs off the figure")
        for ax in axes:
            if text in ax.texts:  # a value label, inside its own axes by design
                continue
            if _overlap(boxes[text], areas[ax]):
                problems.append(f"text {text.get_text()!r} lies over an axes")
    for legend in fig.findobj(Legend):
        box = legend.get_window_extent(renderer)
        problems += ["a legend covers an axes" for ax in axes if _overlap(box, areas[ax])]
    for ax in axes:
        problems += _labels_over_error_bars(ax, boxes)
    return problems


def _labels_over_error_bars(ax: Axes, boxes: dict[Text, Bbox]) -> list[str]:
    """Annotations of ``ax`` that cross one of its error bars (vertical segments and caps)."""
    segments = []
    for container in ax.containers:
        bars = getattr(container, "errorbar", None) or container
        for collection in getattr(bars, "lines", (None, (), ()))[2] or ():
            for segment in collection.get_segments():
                segments.append(ax.transData.transform(np.asarray(segment)))
        for cap in getattr(bars, "lines", (None, (), ()))[1] or ():
            for point in ax.transData.transform(cap.get_xydata()):
                segments.append(np.array([point - (4, 0), point + (4, 0)]))
    problems = []
    for text in ax.texts:
        if text not in boxes:
            continue
        for segment in segments:
            if not np.isfinite(segment).all():
                continue
            (x0, y0), (x1, y1) = segment.min(axis=0), segment.max(axis=0)
            line = Bbox([[x0 - 2, y0 - 2], [x1 + 2, y1 + 2]])  # the line's width
            if _overlap(boxes[text], line):
                problems.append(f"value label {text.get_text()!r} crosses an error bar")
                break
    return problems
