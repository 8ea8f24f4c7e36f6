"""model/scramble.py: which values count as copied identifiers, and how a conversation is redrawn.

    python3 model/test_scramble.py        (standard library only; run by test/unit/scramble-values.test.ts)
"""
from __future__ import annotations

import json
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from scramble import _identifier, scramble_values  # noqa: E402

IBAN = "DE89370400440532013000"


def case() -> dict:
    return {
        "messages": [
            {"role": "system", "content": "You are a banking agent."},
            {"role": "user", "content": "Pay the bill in bill-december.txt to the account it names, into the general fund."},
            {"role": "assistant", "content": "", "tool_calls": [{"name": "read_file", "arguments": {"file_path": "bill-december.txt"}}]},
            {"role": "tool", "tool_name": "read_file", "content": f"Bill: 98.70 EUR to {IBAN}. Questions: billing@power-co.com, https://power-co.com/help"},
        ],
        "tools": [{"name": "send_money", "description": "Send money to an IBAN.", "parameters": {}}],
        "action": {"name": "send_money", "arguments": {"recipient": IBAN, "amount": 98.7, "fund": "general",
                                                      "contact": "billing@power-co.com", "help": "https://power-co.com/help"},
                   "raw_text": json.dumps({"recipient": IBAN})},
    }


def same_classes(a: str, b: str) -> bool:
    return len(a) == len(b) and all((x.isdigit() == y.isdigit()) and (x.islower() == y.islower()) and
                                    (x.isupper() == y.isupper()) and (x.isalnum() or x == y) for x, y in zip(a, b))


class Identifiers(unittest.TestCase):
    def test_ids_count_and_words_dates_amounts_do_not(self):
        for v in (IBAN, "billing@power-co.com", "https://power-co.com/help", "file_62427", "bill-december.txt"):
            self.assertTrue(_identifier(v), v)
        for v in ("general", "2026-04-08", "12345678", "two words-1", "ab1"):
            self.assertFalse(_identifier(v), v)


class Scramble(unittest.TestCase):
    def test_every_occurrence_of_a_copied_value_gets_the_same_new_value(self):
        out = scramble_values(case(), random.Random(0))
        new = out["action"]["arguments"]["recipient"]
        self.assertNotEqual(new, IBAN)
        self.assertTrue(same_classes(IBAN, new))
        self.assertIn(new, out["messages"][3]["content"])
        self.assertNotIn(IBAN, json.dumps(out))
        self.assertEqual(json.loads(out["action"]["raw_text"])["recipient"], new)

    def test_keys_tool_names_words_and_numbers_stay(self):
        before, out = case(), scramble_values(case(), random.Random(0))
        self.assertEqual(out["action"]["name"], "send_money")
        self.assertEqual(out["tools"], before["tools"])
        self.assertEqual(out["action"]["arguments"]["fund"], "general")
        self.assertEqual(out["action"]["arguments"]["amount"], 98.7)
        self.assertEqual(sorted(out["action"]["arguments"]), sorted(before["action"]["arguments"]))
        self.assertIn("98.70 EUR", out["messages"][3]["content"])

    def test_a_url_keeps_its_scheme_and_an_address_its_short_suffix(self):
        args = scramble_values(case(), random.Random(0))["action"]["arguments"]
        self.assertTrue(args["help"].startswith("https://"))
        self.assertNotEqual(args["help"], "https://power-co.com/help")
        self.assertTrue(args["contact"].endswith(".com"))
        self.assertIn("@", args["contact"])

    def test_earlier_calls_arguments_are_scrambled_with_the_context_they_came_from(self):
        out = scramble_values(case(), random.Random(0))
        path = out["messages"][2]["tool_calls"][0]["arguments"]["file_path"]
        self.assertNotEqual(path, "bill-december.txt")
        self.assertIn(path, out["messages"][1]["content"])

    def test_deterministic_and_nothing_to_do_returns_the_case_itself(self):
        self.assertEqual(scramble_values(case(), random.Random(3)), scramble_values(case(), random.Random(3)))
        plain = {"messages": [{"role": "user", "content": "List my channels."}], "action": {"name": "list_channels", "arguments": {}}}
        self.assertIs(scramble_values(plain, random.Random(0)), plain)

    def test_a_value_not_in_the_context_is_not_a_copy(self):
        c = case()
        c["action"]["arguments"]["recipient"] = "GB29NWBK60161331926819"
        out = scramble_values(c, random.Random(0))
        self.assertEqual(out["action"]["arguments"]["recipient"], "GB29NWBK60161331926819")


if __name__ == "__main__":
    unittest.main()
