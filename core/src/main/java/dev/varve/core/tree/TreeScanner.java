package dev.varve.core.tree;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import java.util.Arrays;

/**
 * Reads one batch of a range scan. Leaves carry no sibling links; the scan keeps the path of inner pages it came
 * down and steps to the next leaf through the nearest ancestor with a child to the right, which costs amortised one
 * inner page read per leaf. All state is local, so readers may scan concurrently with each other.
 */
final class TreeScanner {
    /**
     * A batch stops once its keys and values reach this many bytes (it always takes one entry): a caller asks for
     * a count, and a count of 1 MiB values would otherwise copy hundreds of MiB onto the heap at once, per partition.
     */
    static final int MAX_BATCH_BYTES = 256 << 10;
    private final PageAccess pages;
    private final long[] pathIds;
    private final int[] pathIndexes;
    private final int innerLevels;
    private byte[][] keys;
    private byte[][] values;
    private int size;
    private long bytes;

    private TreeScanner(PageAccess pages, int height, int maxEntries) {
        this.pages = pages;
        this.innerLevels = height - 1;
        this.pathIds = new long[innerLevels];
        this.pathIndexes = new int[innerLevels];
        int initial = Math.min(maxEntries, 64);
        this.keys = new byte[initial][];
        this.values = new byte[initial][];
    }

    /** Up to {@code maxEntries} entries with from &lt;(=) key &lt; to; null bounds are open. */
    static ScanBatch scan(PageAccess pages, long metaId, byte[] from, boolean fromInclusive, byte[] toExclusive,
                          int maxEntries) {
        MetaPage.Top top = MetaPage.top(pages, metaId);
        return new TreeScanner(pages, top.height(), maxEntries).run(top.root(), from, fromInclusive, toExclusive, maxEntries);
    }

    private ScanBatch run(long root, byte[] from, boolean fromInclusive, byte[] to, int maxEntries) {
        long leafId = descend(root, 0, from);
        int pos = 0;
        if (from != null) {
            Page leaf = pages.acquireRead(leafId);
            try {
                int found = LeafPage.search(leaf, from);
                pos = found >= 0 ? (fromInclusive ? found : found + 1) : -(found + 1);
            } finally {
                pages.releaseRead(leaf);
            }
        }
        while (true) {
            Page leaf = pages.acquireRead(leafId);
            try {
                for (int count = SlottedPage.count(leaf); pos < count; pos++) {
                    if (to != null && LeafPage.compareKey(leaf, pos, to) >= 0) return batch(false);
                    if (size == maxEntries || bytes >= MAX_BATCH_BYTES) return batch(true);
                    add(leaf, pos);
                }
            } finally {
                pages.releaseRead(leaf);
            }
            leafId = nextLeaf();
            if (leafId == PageId.NONE) return batch(false);
            pos = 0;
        }
    }

    /** Descends from {@code pageId} at {@code level} towards {@code key} (leftmost when null); returns the leaf. */
    private long descend(long pageId, int level, byte[] key) {
        long id = pageId;
        for (; ; level++) {
            Page page = pages.acquireRead(id);
            try {
                int type = page.type();
                if (type == PageHeader.TYPE_LEAF && level == innerLevels) return id;
                if (type != PageHeader.TYPE_INNER || level >= innerLevels)
                    throw new CorruptTreeException("unexpected " + PageHeader.typeName(type) + " page at depth " + level, id);
                int index = key == null ? 0 : InnerPage.childIndex(page, key);
                pathIds[level] = id;
                pathIndexes[level] = index;
                id = InnerPage.child(page, index);
            } finally {
                pages.releaseRead(page);
            }
        }
    }

    /** The leaf after the current one, or {@link PageId#NONE} after the last. */
    private long nextLeaf() {
        for (int level = innerLevels - 1; level >= 0; level--) {
            long child;
            Page page = pages.acquireRead(pathIds[level]);
            try {
                if (pathIndexes[level] >= SlottedPage.count(page)) continue;
                child = InnerPage.child(page, ++pathIndexes[level]);
            } finally {
                pages.releaseRead(page);
            }
            return descend(child, level + 1, null);
        }
        return PageId.NONE;
    }

    private void add(Page leaf, int pos) {
        if (size == keys.length) {
            keys = Arrays.copyOf(keys, size * 2);
            values = Arrays.copyOf(values, size * 2);
        }
        int offset = SlottedPage.slot(leaf, pos);
        int keyLength = LeafPage.keyLength(leaf, offset);
        int valueLength = LeafPage.valueLength(leaf, offset);
        keys[size] = leaf.getBytes(offset + LeafPage.KEY_OFFSET, keyLength);
        values[size] = LeafPage.isInline(leaf.size(), keyLength, valueLength)
                ? leaf.getBytes(LeafPage.valueOffset(leaf, offset), valueLength)
                : OverflowChain.read(pages, LeafPage.overflowId(leaf, offset), valueLength);
        bytes += keyLength + valueLength;
        size++;
    }

    private ScanBatch batch(boolean hasMore) {
        return new ScanBatch(keys, values, size, hasMore);
    }
}
