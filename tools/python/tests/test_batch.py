"""terrafort.batch (tr_batch) against `terrafort batch`: the jobs' files are the
commands' bytes, the summary counts what ran, a second call skips what is done, a
failing job raises with the batch's exit code once the others ran."""
import filecmp
import os

import pytest

import terrafort


def _jobs(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return str(path)


def test_jobs_give_the_commands_bytes(tf, cli, data, tmp_path):
    dem = os.path.join(data, "demo.tif")
    jobs = _jobs(tmp_path / "jobs.txt", ["slope '%s' '%s'" % (dem, tmp_path / "s.tif"),
                                         "fill '%s' '%s'" % (dem, tmp_path / "f.tif")])
    s = terrafort.batch(jobs, program=tf)
    assert (s["total"], s["done"], s["failed"], s["skipped"]) == (2, 2, 0, 0)
    assert filecmp.cmp(tmp_path / "s.tif", cli("slope", dem, "s_cli.tif"), shallow=False)
    assert filecmp.cmp(tmp_path / "f.tif", cli("fill", dem, "f_cli.tif"), shallow=False)
    assert sorted(os.path.basename(o) for j in s["jobs"] for o in j["outputs"]) == ["f.tif", "s.tif"]
    again = terrafort.batch(jobs, program=tf)  # resumed: both done, files there
    assert (again["done"], again["skipped"]) == (0, 2)
    forced = terrafort.batch(jobs, program=tf, force=True, jobs=2)
    assert (forced["done"], forced["skipped"], forced["jobs_per_rank"]) == (2, 0, 2)


def test_failing_job_raises_after_the_others(tf, data, tmp_path):
    dem = os.path.join(data, "demo.tif")
    jobs = _jobs(tmp_path / "jobs.txt", ["slope /nonexistent/dem.tif '%s'" % (tmp_path / "bad.tif"),
                                         "slope '%s' '%s'" % (dem, tmp_path / "s.tif")])
    with pytest.raises(terrafort.TerrafortError) as e:
        terrafort.batch(jobs, program=tf, summary=str(tmp_path / "sum.json"))
    assert e.value.exit_code == 11 and "1 of 2 jobs failed" in str(e.value)
    assert os.path.exists(tmp_path / "s.tif") and not os.path.exists(tmp_path / "bad.tif")


def test_bad_batches(tf, tmp_path):
    with pytest.raises(terrafort.TerrafortError) as e:
        terrafort.batch(str(tmp_path / "none.txt"), program=tf)
    assert e.value.exit_code == 3
    jobs = _jobs(tmp_path / "jobs.txt", ["slop a.tif b.tif"])
    with pytest.raises(terrafort.TerrafortError) as e:
        terrafort.batch(jobs, program=tf)
    assert e.value.exit_code == 2 and "unknown command 'slop'" in str(e.value)
    with pytest.raises(terrafort.TerrafortError) as e:
        terrafort.batch(jobs, program=str(tmp_path / "no-such-program"))
    assert e.value.exit_code == 2 and "no-such-program" in str(e.value)
