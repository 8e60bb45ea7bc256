package dev.varve.core.tree;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageHeader;
import java.util.Arrays;

/**
 * The inner pages a descent passed through and the child taken at each, root first. Splits and merges walk it back
 * up instead of keeping parent links in pages. Reused across operations by its single owner, so a descent
 * allocates nothing once the arrays are as deep as the tree.
 */
final class TreePath {
    private long[] pageIds = new long[8];
    private int[] childIndexes = new int[8];
    private int depth;
    private long leafId;
    /** The inner page the leaf was reached from (released), or null when the root is the leaf. */
    private Page leafParent;

    /** Descends from {@code top}'s root to the leaf whose range holds {@code key}, with read latches only. */
    void descend(PageAccess pages, MetaPage.Top top, byte[] key) {
        int height = top.height();
        if (pageIds.length < height) {
            pageIds = Arrays.copyOf(pageIds, height);
            childIndexes = Arrays.copyOf(childIndexes, height);
        }
        long id = top.root();
        Page parent = top.meta(); // the root is child 0 of the meta page
        for (int level = 0; ; level++) {
            Page page = pages.acquireReadChild(parent, level == 0 ? 0 : childIndexes[level - 1], id);
            try {
                int type = page.type();
                if (type == PageHeader.TYPE_LEAF) {
                    if (level != height - 1) throw new CorruptTreeException("leaf at depth " + level + " of a tree of height " + height, id);
                    depth = level;
                    leafId = id;
                    leafParent = level == 0 ? null : parent;
                    return;
                }
                if (type != PageHeader.TYPE_INNER || level >= height - 1)
                    throw new CorruptTreeException("expected an inner page at depth " + level + ", found " + PageHeader.typeName(type), id);
                int index = InnerPage.childIndex(page, key);
                pageIds[level] = id;
                childIndexes[level] = index;
                id = InnerPage.child(page, index);
                parent = page;
            } finally {
                pages.releaseRead(page);
            }
        }
    }

    /** Number of inner pages above the leaf. */
    int depth() {
        return depth;
    }

    long leafId() {
        return leafId;
    }

    /** The leaf of the last descent, write-latched: found from the page it was reached from, as the descent found it. */
    Page acquireLeafForWrite(PageAccess pages) {
        return leafParent == null ? pages.acquireWrite(leafId) : pages.acquireWriteChild(leafParent, childIndexes[depth - 1], leafId);
    }

    /** As {@link #acquireLeafForWrite}, read-latched. */
    Page acquireLeafForRead(PageAccess pages) {
        return leafParent == null ? pages.acquireRead(leafId) : pages.acquireReadChild(leafParent, childIndexes[depth - 1], leafId);
    }

    /** The inner page at {@code level} (0 is the root). */
    long pageId(int level) {
        return pageIds[level];
    }

    /** The child index taken at {@code level}. */
    int childIndex(int level) {
        return childIndexes[level];
    }
}
