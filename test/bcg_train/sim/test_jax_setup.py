"""Process-wide JAX settings: the memory-map warning for XLA:CPU compiles."""

from bcg_train.sim.jax_setup import MIN_MAP_COUNT, memory_map_warning


def test_memory_map_warning_reads_the_kernel_limit(tmp_path):
    low, high = tmp_path / "low", tmp_path / "high"
    low.write_text("65530\n")
    high.write_text(f"{MIN_MAP_COUNT}\n")
    assert "vm.max_map_count is 65530" in memory_map_warning(low)
    assert memory_map_warning(high) is None
    assert memory_map_warning(tmp_path / "missing") is None
