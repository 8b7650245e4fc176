"""The one read of a user's file: its bytes or its UTF-8 text, or one error line naming it."""

import pytest

from trnprof.errors import TrnprofError
from trnprof.readfile import read_bytes, read_text


def test_a_file_is_read_whole(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("name: é\n", encoding="utf-8")
    assert read_text(path, "config") == "name: é\n"
    assert read_bytes(str(path), "config") == "name: é\n".encode()


@pytest.mark.parametrize(
    "make, reason", [(lambda p: None, "No such file or directory"), (lambda p: p.mkdir(), "Is a directory")]
)
def test_an_unreadable_file_is_one_line_naming_it(tmp_path, make, reason):
    path = tmp_path / "findings.json"
    make(path)
    with pytest.raises(TrnprofError) as caught:
        read_bytes(path, "findings file")
    assert str(caught.value) == f"cannot read findings file {path}: {reason}"


def test_text_that_is_not_utf8_names_the_byte(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_bytes(b"name: \xff\n")
    with pytest.raises(TrnprofError, match=r"config .*config.yaml: byte 6: not UTF-8 text"):
        read_text(path, "config")
