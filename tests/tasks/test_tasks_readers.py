"""CSV / TSV / JSON-lines readers: columns by name, quoting rules, file:line in every error."""

import pytest

from bertology.readers import file_format, read_table


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_tsv_columns_lines_and_literal_quotes(tmp_path):
    path = write(tmp_path, "a.tsv", 'text\tlabel\n"quoted" start\tgames\n\nit\'s 5" wide\tnet\n')
    table = read_table(path)
    assert table.columns == ["text", "label"]
    assert [r.values for r in table.rows] == [
        {"text": '"quoted" start', "label": "games"},
        {"text": "it's 5\" wide", "label": "net"},
    ]
    assert [r.where for r in table.rows] == [f"{path}:2", f"{path}:4"]  # the blank line 3 is skipped


def test_csv_quoting_and_multiline_records(tmp_path):
    path = write(tmp_path, "a.csv", 'text,label\n"one, with comma",x\n"say ""hi""",y\n"two\nlines",z\nplain,w\n')
    rows = read_table(path).rows
    assert [r["text"] for r in rows] == ["one, with comma", 'say "hi"', "two\nlines", "plain"]
    assert [r.where.rsplit(":", 1)[1] for r in rows] == ["2", "3", "4", "6"]  # the record after a 2-line one


def test_csv_bom_and_field_count_error(tmp_path):
    path = write(tmp_path, "b.csv", "\ufefftext,label\nok,x\ntoo,many,fields\n")
    with pytest.raises(ValueError, match=r"b\.csv:3: 3 fields, but the header names 2 columns \('text', 'label'\)"):
        read_table(path)
    assert read_table(write(tmp_path, "c.csv", "\ufefftext,label\nok,x\n")).columns == ["text", "label"]


def test_csv_unclosed_quote_names_line(tmp_path):
    path = write(tmp_path, "q.csv", 'text,label\nfine,x\n"never closed,y\n')
    with pytest.raises(ValueError, match=r"q\.csv:3: malformed CSV"):
        read_table(path)


def test_jsonl_types_columns_and_errors(tmp_path):
    path = write(tmp_path, "a.jsonl", '{"text": "a", "score": 3.5}\n\n{"text": "b", "score": 1, "extra": [1]}\n')
    table = read_table(path)
    assert table.columns == ["text", "score", "extra"]
    assert [r["score"] for r in table.rows] == [3.5, 1]
    assert table.rows[1].where == f"{path}:3"
    with pytest.raises(ValueError, match=r"a\.jsonl:1: no column 'extra'; columns present: 'text', 'score'"):
        table.rows[0]["extra"]
    bad = write(tmp_path, "bad.jsonl", '{"text": "a"}\n{"text": oops}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: not valid JSON"):
        read_table(bad)
    arr = write(tmp_path, "arr.jsonl", '[{"text": "a"}]\n')
    with pytest.raises(ValueError, match=r"arr\.jsonl:1: expected a JSON object per line, got list"):
        read_table(arr)


def test_missing_column_lists_columns_present(tmp_path):
    table = read_table(write(tmp_path, "d.tsv", "sentence\tgold\nhello\tx\n"))
    with pytest.raises(ValueError) as err:
        table.require(text_column="text", label_column="gold")
    assert str(err.value) == f"{table.path}: no column 'text' (the text_column); columns present: 'sentence', 'gold'"
    table.require(text_column="sentence", pair_column=None)  # None: not needed


def test_text_and_number_values(tmp_path):
    path = write(tmp_path, "e.jsonl", '{"t": "  ", "n": "2.5", "m": "x", "k": true}\n')
    row = read_table(path).rows[0]
    with pytest.raises(ValueError, match=r"e\.jsonl:1: column 't' is empty"):
        row.text("t")
    assert row.number("n") == 2.5
    with pytest.raises(ValueError, match=r"e\.jsonl:1: column 'm' should be a number, got 'x'"):
        row.number("m")
    with pytest.raises(ValueError, match="should be a number, got True"):
        row.number("k")
    with pytest.raises(ValueError, match="should be text, got float"):
        read_table(write(tmp_path, "f.jsonl", '{"t": 1.5}\n')).rows[0].text("t")


def test_format_by_extension_and_errors(tmp_path):
    assert file_format("x.TSV") == "tsv" and file_format("x.ndjson") == "jsonl" and file_format("x.csv") == "csv"
    with pytest.raises(ValueError, match=r"data\.txt: cannot tell the format from the extension '\.txt'"):
        file_format("data.txt")
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        file_format("a.csv", "xml")
    with pytest.raises(ValueError, match=r"empty\.tsv: empty file"):
        read_table(write(tmp_path, "empty.tsv", ""))
    with pytest.raises(ValueError, match="appear more than once"):
        read_table(write(tmp_path, "dup.csv", "text,text\na,b\n"))
