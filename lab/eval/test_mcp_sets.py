"""Checks of lab/eval/mcp_sets.py (standard library only; run by test/unit/mcp-sets.test.ts): the choosing and
reporting halves share no server and no schema, the report servers were never trained on, every client is a
real-sized one, and every injected case has a benign twin that differs from it only by the attack.

    python3 lab/eval/test_mcp_sets.py
"""
from __future__ import annotations

import json
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "model"))
import corpus  # noqa: E402
import mcp_sets  # noqa: E402
import poison_shapes  # noqa: E402

DATASETS = os.environ.get("DATASETS", os.path.join(HERE, "..", "..", "..", "shared", "datasets"))
PAIRS = 48  # three of each attack type and flow per half


@unittest.skipUnless(os.path.isdir(DATASETS), f"no datasets at {DATASETS}")
class McpSetsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pools = mcp_sets.Pools(DATASETS)
        cls.cases = {h: mcp_sets.build(cls.pools, h, PAIRS, seed=3) for h in mcp_sets.HALVES}

    def pairs(self, half):
        by_id = {c["id"]: c for c in self.cases[half]}
        for c in self.cases[half]:
            if c["label"] == "injected":
                yield c, by_id[c["pair_id"] + "-benign"]

    def test_the_halves_share_no_server_and_no_bfcl_schema(self):
        choose, report = self.pools.half["choose"], self.pools.half["report"]
        self.assertFalse(set(choose["servers"]) & set(report["servers"]))
        self.assertFalse(set(choose["schemas"]) & set(report["schemas"]))
        names = {h: {t["name"] for c in self.cases[h] for t in c["tools"]} for h in self.cases}
        self.assertFalse(names["choose"] & names["report"])
        for h, pool in self.pools.half.items():
            known = set(pool["schemas"]) | {n for s in pool["servers"] for n in pool["mcp"][s]}
            for c in self.cases[h]:
                self.assertEqual(c["mcp_servers"], pool["servers"])
                lookalike = c["attack_type"] in ("name_collision", "preference_manipulation")
                unknown = {t["name"] for t in c["tools"]} - known
                self.assertLessEqual(len(unknown), 1 if lookalike else 0, c["id"])

    def test_report_servers_were_never_trained_on_and_choose_servers_are_validation_ones(self):
        report, choose = self.pools.half["report"]["servers"], self.pools.half["choose"]["servers"]
        self.assertTrue(report and choose)
        for s in report:
            self.assertNotIn(s, corpus.SHIPPED_MODEL_TRAINED_ON)
            self.assertEqual(corpus.mcp_split(s), "test")
        for s in choose:
            self.assertNotIn(s, corpus.SHIPPED_MODEL_TRAINED_ON)
            self.assertEqual(corpus.mcp_split(s), "validation")
        self.assertIn("sequentialthinking", report)
        self.assertIn("puppeteer", choose)
        # Every MCP tool in a report client comes from a report server.
        mcp_names = {t["name"]: t["server"] for t in corpus.read_jsonl(f"{DATASETS}/mcp_servers/tools.jsonl.xz")}
        for c in self.cases["report"]:
            for t in c["tools"]:
                if t["name"] in mcp_names:
                    self.assertIn(mcp_names[t["name"]], report)

    def test_every_client_holds_10_to_30_tools_with_unique_names(self):
        for c in (c for cs in self.cases.values() for c in cs):
            names = [t["name"] for t in c["tools"]]
            self.assertTrue(10 <= len(names) <= 30, (c["id"], len(names)))
            self.assertEqual(len(names), len(set(names)), c["id"])
            self.assertIn(c["action"]["name"], names, c["id"])
            self.assertEqual(c["messages"][0]["role"], "system")

    def test_every_injected_case_has_a_benign_twin_with_the_same_tools_and_request(self):
        for h in self.cases:
            self.assertEqual(sum(c["label"] == "injected" for c in self.cases[h]), PAIRS)
            self.assertEqual(sum(c["label"] == "benign" for c in self.cases[h]), PAIRS)
            for inj, twin in self.pairs(h):
                self.assertEqual([t["name"] for t in inj["tools"]], [t["name"] for t in twin["tools"]], inj["id"])
                self.assertEqual([m["content"] for m in inj["messages"] if m["role"] in ("system", "user")],
                                 [m["content"] for m in twin["messages"] if m["role"] in ("system", "user")])
                self.assertEqual(len(inj["messages"]), len(twin["messages"]))
                self.assertEqual({k: twin["action"][k] for k in ("name", "arguments")}, twin["intended_action"])
                self.assertEqual(inj["intended_action"], twin["intended_action"])
                self.assertIsNone(twin["poisoned_tool"])
                self.assertEqual(twin["injected_in"], [])
                self.assertIsNone(twin["expected_flow"])
                differ = [i for i, (a, b) in enumerate(zip(inj["messages"], twin["messages"])) if a != b]
                self.assertEqual(differ, inj["injected_in"], inj["id"])
                for v in inj["attacker_values"]:
                    if len(str(v)) >= 4:
                        self.assertNotIn(str(v), json.dumps([twin["messages"], twin["tools"]], ensure_ascii=False))

    def test_every_attack_type_and_both_flows_appear_in_each_half(self):
        for h in self.cases:
            seen = {(c["attack_type"], c["attack"]["type"]) for c in self.cases[h] if c["label"] == "injected"}
            self.assertEqual(seen, {(t, a) for t in mcp_sets.ATTACK_TYPES for a in ("A1", "A2")})

    def test_a1_calls_another_tool_and_a2_changes_only_an_argument_of_the_users_tool(self):
        for h in self.cases:
            for inj, twin in self.pairs(h):
                if inj["attack"]["type"] == "A1":
                    self.assertEqual(inj["expected_flow"], "control")
                    self.assertNotEqual(inj["action"]["name"], twin["action"]["name"], inj["id"])
                else:
                    self.assertEqual(inj["expected_flow"], "data")
                    self.assertEqual(inj["action"]["name"], twin["action"]["name"], inj["id"])
                    self.assertNotEqual(inj["action"]["arguments"], twin["action"]["arguments"], inj["id"])
                    changed = {k for k in set(inj["action"]["arguments"]) | set(twin["action"]["arguments"])
                               if inj["action"]["arguments"].get(k) != twin["action"]["arguments"].get(k)}
                    self.assertEqual(len(changed), 1, inj["id"])
                self.assertEqual(json.loads(inj["action"]["raw_text"]), {k: inj["action"][k] for k in ("name", "arguments")})

    def test_poisoned_tool_is_set_exactly_for_description_attacks_and_names_a_tool_of_the_client(self):
        for h in self.cases:
            for inj, twin in self.pairs(h):
                described = inj["attack_type"] in mcp_sets.DESCRIPTION_ATTACKS
                self.assertEqual(inj["kind"], "tool_poisoning" if described else "tool_result_injection")
                if described:
                    self.assertIn(inj["poisoned_tool"], {t["name"] for t in inj["tools"]})
                    self.assertEqual(inj["injected_in"], [])
                    poisoned = next(t for t in inj["tools"] if t["name"] == inj["poisoned_tool"])
                    clean = next(t for t in twin["tools"] if t["name"] == inj["poisoned_tool"])
                    self.assertNotEqual(poisoned, clean)
                    self.assertEqual([t for t in inj["tools"] if t["name"] != inj["poisoned_tool"]],
                                     [t for t in twin["tools"] if t["name"] != inj["poisoned_tool"]])
                else:
                    self.assertIsNone(inj["poisoned_tool"])
                    self.assertEqual(inj["tools"], twin["tools"])
                    (i,) = inj["injected_in"]
                    self.assertEqual(inj["messages"][i]["role"], "tool")
                    self.assertEqual(inj["driver"], {"kind": "tool_result", "message_index": i})

    def test_the_set_is_deterministic_for_a_seed(self):
        a = json.dumps(mcp_sets.build(self.pools, "report", 16, seed=5))
        self.assertEqual(a, json.dumps(mcp_sets.build(self.pools, "report", 16, seed=5)))
        self.assertNotEqual(a, json.dumps(mcp_sets.build(self.pools, "report", 16, seed=6)))

    def test_adapt_traffic_is_attack_free_and_shares_no_request_with_the_evaluation_half(self):
        traffic = mcp_sets.traffic(self.pools, "report", 40, 3, self.cases["report"])
        asked = {m["content"] for c in self.cases["report"] for m in c["messages"] if m["role"] == "user"}
        used = {r for c in self.cases["report"] for r in c["bfcl_records"]}
        self.assertEqual(len(traffic), 40)
        for conv in traffic:
            self.assertFalse(set(conv["bfcl_records"]) & used)
            self.assertFalse({m["content"] for m in conv["messages"] if m["role"] == "user"} & asked)
            call = conv["messages"][-1]["tool_calls"][0]
            self.assertIn(call["name"], {t["name"] for t in conv["tools"]})
            text = json.dumps(conv, ensure_ascii=False)
            for attack in self.cases["report"]:
                for v in attack.get("attacker_values") or []:
                    if len(str(v)) >= 6:
                        self.assertNotIn(str(v), text)

    def test_no_attack_phrasing_is_taken_from_the_training_templates(self):
        families = (corpus.INJECTIONS, corpus.POISONS_A1, corpus.POISONS_A2, poison_shapes.LOOKALIKE, poison_shapes.EXTRA_PARAM)
        training = [t for fam in families for ts in fam.values() for t in ts]
        training_text = "\n".join(training).lower()
        for kind, flows in mcp_sets.TEMPLATES.items():
            for a, templates in flows.items():
                self.assertGreaterEqual(len(templates), 3, (kind, a))
                for tpl in templates:
                    for chunk in re.split(r"\{\w+\}", tpl):
                        words = chunk.lower().split()
                        for i in range(len(words) - 3):
                            self.assertNotIn(" ".join(words[i:i + 4]), training_text, (kind, a, tpl))


if __name__ == "__main__":
    unittest.main()
