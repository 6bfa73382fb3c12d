// The order and indentation sessions are listed in (`dh ls`, the console's list): each subagent under the
// session that delegated to it (in the order they were created), top-level sessions in the order given.

export interface TreeNode {
  readonly sessionId: string;
  readonly createdAt: number;
  /** The session that delegated to it, when it is a subagent. */
  readonly parentSessionId: string | null;
}

export interface TreePlace<T> {
  readonly node: T;
  /** 0 for a root: a top-level session, or a subagent whose parent is not in the listing. */
  readonly depth: number;
  /** `├─ ` / `└─ ` after the ancestors' `│  ` / blank columns; '' for a root. */
  readonly prefix: string;
}

/** Depth-first: a parent, then its children's subtrees. A cycle (only a forged store has one) is cut. */
export function sessionTree<T extends TreeNode>(nodes: readonly T[]): TreePlace<T>[] {
  const ids = new Set(nodes.map((n) => n.sessionId));
  const children = new Map<string, T[]>();
  const roots: T[] = [];
  for (const node of nodes) {
    const parent = node.parentSessionId;
    if (parent === null || parent === node.sessionId || !ids.has(parent)) {
      roots.push(node);
      continue;
    }
    const siblings = children.get(parent) ?? [];
    siblings.push(node);
    children.set(parent, siblings);
  }
  for (const siblings of children.values()) {
    siblings.sort((a, b) => a.createdAt - b.createdAt || a.sessionId.localeCompare(b.sessionId));
  }
  const out: TreePlace<T>[] = [];
  const placed = new Set<string>();
  const visit = (node: T, depth: number, lead: string, last: boolean): void => {
    placed.add(node.sessionId);
    out.push({ node, depth, prefix: depth === 0 ? '' : `${lead}${last ? '└─ ' : '├─ '}` });
    const kids = (children.get(node.sessionId) ?? []).filter((k) => !placed.has(k.sessionId));
    const nextLead = depth === 0 ? '' : `${lead}${last ? '   ' : '│  '}`;
    kids.forEach((kid, i) => visit(kid, depth + 1, nextLead, i === kids.length - 1));
  };
  for (const root of roots) visit(root, 0, '', true);
  // Sessions only reachable through a cycle: listed as roots rather than lost.
  for (const node of nodes) if (!placed.has(node.sessionId)) visit(node, 0, '', true);
  return out;
}
