"""The demo's plots draw every run, whatever its objective logs."""

from bertology.viz import plots


def test_pretraining_curves_draw_mlm_and_plm_runs(monkeypatch, tmp_path):
    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figures.append(fig) or path)
    runs = {
        "bert": [{"step": 1, "mlm_loss": 7.0}, {"step": 2, "mlm_loss": 6.0}, {"step": 2, "eval/mlm_accuracy": 0.1}],
        "xlnet": [{"step": 1, "plm_loss": 7.5}, {"step": 2, "plm_loss": 6.5}, {"step": 2, "eval/plm_accuracy": 0.2}],
    }
    plots.plot_curves(runs, tmp_path / "curves.png", {"bert": 10, "xlnet": 10})
    left, right = figures[0].axes
    drawn = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in left.lines}
    assert drawn == {"bert (MLM)": ([10, 20], [7.0, 6.0]), "xlnet (PLM)": ([10, 20], [7.5, 6.5])}
    accuracy = {line.get_label(): list(line.get_ydata()) for line in right.lines}
    assert accuracy == {"bert (MLM)": [0.1], "xlnet (PLM)": [0.2]}
    assert left.lines[0].get_color() != left.lines[1].get_color()
