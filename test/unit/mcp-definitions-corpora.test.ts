/**
 * No false alarms on real servers: the tool-definition checks find nothing in any MCP reference server on
 * its own, nothing in BFCL's schemas (4,715 records, multi-turn tools split into servers by their API), and,
 * with every reference server in one client, only the same-name collisions those servers really have
 * (github's and gitlab's tools, postgres's and oracle's `query`): a client holding both would list two
 * tools of one name. Numbers: docs/evaluation.md, "Tool definitions without the model". Reads the .xz files with
 * the system's xz.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { realServerFindings } from '../../lab/eval/mcp-definitions.js';
import { requirement } from '../requirements.js';

const HAS_DATASETS = requirement(existsSync('../shared/datasets/mcp_servers/tools.jsonl.xz') && existsSync('../shared/datasets/bfcl/single_turn.jsonl.xz'), '../shared/datasets (mcp_servers, bfcl)');
const CORPORA_TIMEOUT_MS = 60_000;

describe.skipIf(!HAS_DATASETS)('the tool-definition checks on real servers', () => {
  it(
    'find nothing in the reference servers alone or in BFCL, and only their real same-name collisions together',
    () => {
      const { alone, together, bfcl, bfclRecords } = realServerFindings();
      expect(alone).toEqual([]);
      expect(bfclRecords).toBe(4_715);
      expect(bfcl).toEqual([]);
      expect(together.every((f) => f.kind === 'name-collision' && f.evidence === 'same-name')).toBe(true);
      const pairs = together.map((f) => `${f.related!.server.split('@')[0]}/${f.server.split('@')[0]} ${f.tool}`).sort();
      expect(pairs).toEqual(
        [
          ...['create_branch', 'create_issue', 'create_or_update_file', 'create_repository', 'fork_repository', 'get_file_contents', 'push_files', 'search_repositories'].map((t) => `github/gitlab ${t}`),
          'oracle/postgres query',
        ].sort(),
      );
    },
    CORPORA_TIMEOUT_MS,
  );
});
