"""The demo's label-curve figure: a line per start over several label counts, or, when one count ran,
one row per start (a single column of points would hide them behind each other)."""

import pytest

from bertology.viz.plots import plot_label_curve

pytest.importorskip("matplotlib")


def _lines(counts):
    return {
        "bert": [(c, 0.5 + 0.01 * i, [0.45, 0.55 + 0.01 * i]) for i, c in enumerate(counts)],
        "bert (random init)": [(c, 0.4, [0.35, 0.45]) for c in counts],
        "bag-of-words": [(c, 0.42, [0.38, 0.46]) for c in counts],
    }


@pytest.mark.parametrize("counts", [[10, None], [10]], ids=["curve", "one count"])
def test_label_curve_draws_every_start_with_its_method(tmp_path, counts, monkeypatch):
    import matplotlib.axes

    drawn = []
    original = matplotlib.axes.Axes.errorbar

    def spy(self, x, y, *args, **kw):
        drawn.append((list(x), list(y), kw.get("label")))
        return original(self, x, y, *args, **kw)

    monkeypatch.setattr(matplotlib.axes.Axes, "errorbar", spy)
    path = plot_label_curve(
        _lines(counts),
        tmp_path / "c.png",
        all_labels=175,
        title="t",
        references={"bag-of-words"},
        methods={"bert": "prompt", "bert (random init)": "head"},
    )
    assert path.stat().st_size > 5_000
    assert len(drawn) == 3
    if len(counts) == 1:  # a row each, in the order given, accuracies along x
        assert [d[1] for d in drawn] == [[0], [1], [2]] and [d[0] for d in drawn] == [[0.5], [0.4], [0.42]]
    else:
        assert [d[2] for d in drawn] == ["bert: prompt", "bert (random init): head", "bag-of-words"]
        assert drawn[0][0] == [10, 175]
