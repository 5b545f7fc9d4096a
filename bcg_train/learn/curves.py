"""Training curves of a run (``metrics.csv``) as one PNG, rewritten at every checkpoint."""

from __future__ import annotations

import csv
import math
from pathlib import Path

# (column, axis label, log scale)
PANELS = (
    ("reward", "reward per step", False),
    ("tracking_error_m", "tracking error (m)", False),
    ("episodes_ended", "episodes ended per iteration", False),
    ("actor_grad_norm", "actor gradient norm (before clipping)", True),
    ("critic_loss", "critic loss (after fitting the window)", True),
    ("critic_loss_fresh", "critic loss on the new window (before fitting)", True),
    ("critic_explained_variance", "critic explained variance (before fitting)", False),
    ("bundled", "fraction of steps in a BCG bundle", False),
    ("sim_failures", "simulation failures per iteration", False),
    ("skipped_actor_updates", "actor updates skipped (non-finite gradient)", False),
)


def read_metrics(path: Path) -> dict[str, list[float]]:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    columns: dict[str, list[float]] = {}
    for row in rows:
        for key, value in row.items():
            try:
                columns.setdefault(key, []).append(float(value))
            except (TypeError, ValueError):
                columns.setdefault(key, []).append(math.nan)
    return columns


SMOOTHING_WINDOW = 20  # iterations in the trailing mean drawn over the raw curve


def trailing_mean(values: list[float], window: int) -> list[float]:
    """Mean of the last ``window`` values at each point (fewer at the start); NaN if none finite."""
    out = []
    for i in range(len(values)):
        recent = [v for v in values[max(0, i - window + 1) : i + 1] if math.isfinite(v)]
        out.append(sum(recent) / len(recent) if recent else math.nan)
    return out


def plot_training_curves(metrics_csv: Path, out_png: Path, title: str = "") -> Path:
    """:func:`training_curves_figure` of ``metrics_csv``, saved as ``out_png``."""
    fig = training_curves_figure(read_metrics(metrics_csv), title or str(metrics_csv.parent))
    import matplotlib.pyplot as plt  # after the figure: it chose the Agg backend

    out_png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png, dpi=90)
    plt.close(fig)
    return out_png


def training_curves_figure(data: dict[str, list[float]], title: str):
    """One axis per :data:`PANELS` entry, in order, titled with its label: the column's
    finite values against environment steps (iterations when ``env_steps`` is not
    logged), raw and as a trailing mean over ``SMOOTHING_WINDOW`` iterations (a log
    panel drops values <= 0); non-finite values are marked at the top of the axis, a
    column that is not in ``data`` reads "not logged". The caller closes the figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = data.get("env_steps") or data.get("iteration", [])
    fig, axes = plt.subplots(2, (len(PANELS) + 1) // 2, figsize=(17, 6.5), sharex=True)
    for ax, (key, label, log) in zip(axes.flat, PANELS):
        ys = data.get(key)
        ax.set_title(label, fontsize=9)
        if not ys:
            ax.text(0.5, 0.5, "not logged", ha="center", va="center", transform=ax.transAxes)
            continue
        finite = [(a, b) for a, b in zip(x, ys) if math.isfinite(b) and (b > 0 or not log)]
        if finite:
            xs, vs = zip(*finite)
            ax.plot(xs, vs, lw=0.8, alpha=0.35, color="tab:blue")
            ax.plot(xs, trailing_mean(list(vs), SMOOTHING_WINDOW), lw=1.6, color="tab:blue")
        bad = [a for a, b in zip(x, ys) if not math.isfinite(b)]
        if bad:
            ax.plot(bad, [1.0] * len(bad), "rx", transform=ax.get_xaxis_transform(), label=f"non-finite ({len(bad)})")
            ax.legend(fontsize=8)
        if log:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("environment steps")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def run_comparison_figure(runs: dict[str, Path], smoothing: int = 25):
    """Runs side by side, one line each (label -> run folder holding ``metrics.csv`` and
    ``select/checkpoints.csv``): the training reward (trailing mean of ``smoothing``
    iterations) by iteration and by wall time, the falls and E_track of the checkpoints
    the selection judged, and the training episodes ended per iteration (trailing mean;
    "not logged" where a run's metrics lack the column)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 5, figsize=(22, 4))
    for label, folder in runs.items():
        m, sel = read_metrics(Path(folder) / "metrics.csv"), read_metrics(Path(folder) / "select" / "checkpoints.csv")
        reward = trailing_mean(m["reward"], smoothing)
        axes[0].plot(m["iteration"], reward, label=label)
        axes[1].plot([w / 60 for w in m["wall_s"]], reward, label=label)
        axes[2].plot(sel["iteration"], sel["falls"], "o-", label=label)
        axes[3].plot(sel["iteration"], sel["e_track_cm"], "o-", label=label)
        if "episodes_ended" in m:
            axes[4].plot(m["iteration"], trailing_mean(m["episodes_ended"], smoothing), label=label)
    axes[0].set(xlabel="iteration", ylabel=f"reward per step (trailing mean of {smoothing})", title="training reward")
    axes[1].set(xlabel="wall time (min, compile included)", ylabel=f"reward per step (trailing mean of {smoothing})",
                title="by wall time")
    axes[2].set(xlabel="iteration", ylabel="falls of 20", title="falls, selection seeds (DR on)")
    axes[3].set(xlabel="iteration", ylabel="cm", title="E_track, selection seeds")
    axes[4].set(xlabel="iteration", ylabel=f"per iteration (trailing mean of {smoothing})",
                title="training episodes ended (train model)")
    if not axes[4].lines:
        axes[4].text(0.5, 0.5, "not logged", ha="center", va="center", transform=axes[4].transAxes)
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    return fig


def plot_run_comparison(runs: dict[str, Path], out_png: Path) -> Path:
    """:func:`run_comparison_figure` saved as ``out_png``."""
    fig = run_comparison_figure(runs)
    import matplotlib.pyplot as plt

    fig.savefig(out_png, dpi=100)
    plt.close(fig)
    return out_png


def plot_benchmark(methods: dict[str, dict], out_png: Path, max_falls: int, max_e_track_cm: float) -> Path:
    """``bcg-benchmark --report``'s figure: the falls and E_track of every judged policy of each method
    against env steps and against training time, with the threshold drawn. ``methods``: name ->
    {"judged": selection rows, "steps_per_iteration": int, "history": rows with env_steps, wall_s}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(2, 2, figsize=(12, 7), sharey="row")
    for name, m in methods.items():
        rows = sorted(m["judged"], key=lambda r: int(r["iteration"]))
        if not rows:
            continue
        wall = {int(round(h["env_steps"] / m["steps_per_iteration"])): h["wall_s"] for h in m["history"]}
        steps = [int(r["iteration"]) * m["steps_per_iteration"] for r in rows]
        minutes = [wall.get(int(r["iteration"]), float("nan")) / 60 for r in rows]
        for col, x in enumerate((steps, minutes)):
            axes[0, col].plot(x, [int(r["falls"]) for r in rows], "o-", label=name)
            axes[1, col].plot(x, [float(r["e_track_cm"]) for r in rows], "o-", label=name)
    for col, xlabel in enumerate(("env steps", "training time (min, compiles excluded)")):
        axes[0, col].axhline(max_falls, color="k", ls="--", lw=0.8)
        axes[1, col].axhline(max_e_track_cm, color="k", ls="--", lw=0.8)
        axes[1, col].set(xlabel=xlabel)
        for row in (0, 1):
            axes[row, col].set_xscale("log" if col == 0 else "linear")
            axes[row, col].xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            axes[row, col].grid(alpha=0.3)
    axes[0, 0].set(ylabel="falls on the selection seeds", title="judged policies (dashed: threshold)")
    axes[1, 0].set(ylabel="E_track (cm)")
    if axes[0, 0].lines:  # nothing judged yet: no legend
        axes[0, 0].legend()
    fig.tight_layout()
    fig.savefig(out_png, dpi=100)
    plt.close(fig)
    return out_png
