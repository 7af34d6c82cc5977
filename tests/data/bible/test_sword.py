"""Export and module checks against a stand-in ``diatheke`` that prints recorded output."""

import os
import stat
import sys
from pathlib import Path

import pytest

from seq2seq.data.bible.sword import ensure_modules, export_module
from seq2seq.errors import UserError

# Shapes copied from real engWEB2015eb output: a repeated Psalm title, a deuterocanonical book
# between the testaments, the glossary appended to the last verse.
EXPORT = """\
Genesis 1:1: <w savlm="strong:H0430">In</w> <w savlm="strong:H7225">beginning</w>, \
<w savlm="strong:H0430">God</w><note placement="foot" swordFootnote="1"></note>\
<w savlm="strong:H1254">created</w> the heavens.
Genesis 1:2: The earth was
formless and empty.
<title canonical="true" type="psalm">A Psalm by David.</title> <lg sID="g1"/> <l level="1" sID="g2"/>\
Psalms 3:1: Yahweh, how my adversaries have increased!
<title canonical="true" type="psalm">A Psalm by David.</title> <lg sID="g1"/> <l level="1" sID="g2"/>\
Psalms 3:2: Many there are.
<title canonical="true" type="psalm">A Psalm by David.</title> <lg sID="g1"/> <l level="1" sID="g2"/>\
Psalms 4:1: Answer me when I call.
<title canonical="true" type="psalm">A Psalm by David.</title> <lg sID="g1"/> <l level="1" sID="g2"/>\
Tobit 1:1: The book of the words of Tobit.
<title canonical="true" type="psalm">A Psalm by David.</title> <lg sID="g1"/> <l level="1" sID="g2"/>\
Revelation of John 22:21: The grace of the Lord Jesus Christ be with all the saints. Amen.  \
<chapter eID="Rev.22"/><div sID="gen35837" type="glossary"/> Abaddon is Hebrew for destruction.
(FAKE)
"""


def _fake_diatheke(tmp_path, export: str = EXPORT, exit_code: int = 0) -> str:
    (tmp_path / "export.txt").write_text(export, encoding="utf-8")
    script = tmp_path / "diatheke"
    script.write_text(
        f"""#!{sys.executable}
import sys
from pathlib import Path
args = sys.argv[1:]
if args[:2] == ["-b", "system"]:
    print("Biblical Texts:\\nFAKE : A fake Bible\\nCommentaries:")
else:
    sys.stdout.write(open({str(tmp_path / "export.txt")!r}, encoding="utf-8").read())
sys.exit({exit_code})
""",
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_export_parses_keys_titles_continuations_and_skips_other_books(tmp_path):
    verses = export_module("FAKE", diatheke=_fake_diatheke(tmp_path), progress=False)
    assert [v.ref for v in verses] == ["Gen.1.1", "Gen.1.2", "Ps.3.1", "Ps.3.2", "Ps.4.1", "Rev.22.21"]
    text = {v.ref: v.text for v in verses}
    assert text["Gen.1.1"] == "In beginning, God created the heavens."
    assert text["Gen.1.2"] == "The earth was formless and empty."
    assert text["Ps.3.1"] == "A Psalm by David. Yahweh, how my adversaries have increased!"
    assert text["Ps.3.2"] == "Many there are."  # the repeated title is not the verse's
    assert text["Ps.4.1"] == "Answer me when I call."
    assert text["Rev.22.21"] == "The grace of the Lord Jesus Christ be with all the saints. Amen."
    assert verses[0].strongs == frozenset({"H430", "H7225", "H1254"})


def test_failing_diatheke_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="could not export module FAKE"):
        export_module("FAKE", diatheke=_fake_diatheke(tmp_path, export="", exit_code=1), progress=False)


def test_installed_modules_pass_the_check(tmp_path):
    ensure_modules(["FAKE"], packages={}, diatheke=_fake_diatheke(tmp_path), install=False)


def test_missing_module_names_the_packages_to_install(tmp_path):
    with pytest.raises(UserError) as error:
        ensure_modules(
            ["FAKE", "spaRV1909eb"],
            packages={"spaRV1909eb": "sword-text-sparv"},
            diatheke=_fake_diatheke(tmp_path),
            install=False,
        )
    assert str(error.value) == (
        "SWORD modules spaRV1909eb are not installed; install them with: "
        "sudo apt-get install diatheke sword-text-sparv"
    )


def test_missing_diatheke_names_every_package(tmp_path):
    with pytest.raises(UserError, match=r"sudo apt-get install diatheke sword-text-sparv sword-text-web$"):
        ensure_modules(
            ["engWEB2015eb", "spaRV1909eb"],
            diatheke=str(tmp_path / "no-diatheke"),
            install=False,
            packages={"engWEB2015eb": "sword-text-web", "spaRV1909eb": "sword-text-sparv"},
        )


def _fake_apt_get(tmp_path, diatheke: str, exit_code: int = 0) -> Path:
    """An apt-get that records its arguments and, on install, puts the stand-in diatheke in place."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    script = bin_dir / "apt-get"
    script.write_text(
        f"""#!{sys.executable}
import shutil, sys
with open({str(tmp_path / "apt.log")!r}, "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
if {exit_code}:
    sys.stderr.write("E: Unable to locate package sword-text-sparv\\n")
    sys.exit({exit_code})
if sys.argv[1] == "install":
    shutil.copy({diatheke!r}, {str(tmp_path / "installed" / "diatheke")!r})
""",
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "installed").mkdir()
    return bin_dir


def test_missing_packages_are_installed_with_apt_get_as_root(tmp_path, monkeypatch):
    bin_dir = _fake_apt_get(tmp_path, _fake_diatheke(tmp_path))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    installed = str(tmp_path / "installed" / "diatheke")
    ensure_modules(["FAKE"], packages={"FAKE": "sword-text-fake"}, diatheke=installed)
    calls = (tmp_path / "apt.log").read_text().splitlines()
    assert calls == ["update -q", "install -y -q diatheke sword-text-fake"]


def test_failed_apt_get_is_one_line_naming_the_packages(tmp_path, monkeypatch):
    bin_dir = _fake_apt_get(tmp_path, _fake_diatheke(tmp_path), exit_code=100)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    with pytest.raises(UserError) as error:
        ensure_modules(["spaRV1909eb"], packages={"spaRV1909eb": "sword-text-sparv"},
                       diatheke=str(tmp_path / "installed" / "diatheke"))  # fmt: skip
    assert str(error.value) == ("'apt-get update -q' failed (E: Unable to locate package sword-text-sparv); "
                                "install diatheke sword-text-sparv by hand")  # fmt: skip


def test_without_root_the_error_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(UserError) as error:
        ensure_modules(["spaRV1909eb"], packages={"spaRV1909eb": "sword-text-sparv"},
                       diatheke=str(tmp_path / "absent" / "diatheke"))  # fmt: skip
    assert str(error.value).endswith("install them with: sudo apt-get install diatheke sword-text-sparv")


def test_module_without_a_known_package_is_reported(tmp_path):
    with pytest.raises(UserError, match="SWORD modules OTHER are not installed and no Debian package is"):
        ensure_modules(["FAKE", "OTHER"], packages={}, diatheke=_fake_diatheke(tmp_path), install=False)
