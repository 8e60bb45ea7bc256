package dev.varve.core.tree;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;

/**
 * Inserts and replaces entries: finds the leaf, writes the cell, and splits full pages bottom-up along the descent
 * path, growing a new root when the old one splits. Writer side only (one writer per partition).
 *
 * <p>Design note: a split rebuilds both halves from a scratch copy of the full page, in key order, rather than
 * shuffling cells in place; the halves come out compacted and the code has one path for every insert position.
 * Appending past a page's last key keeps the full page and starts the new one with the new entry alone, so
 * ascending loads fill their pages instead of leaving them half empty.
 */
final class TreeInserter {
    private final PageAccess pages;
    private final long metaId;
    private final PageAllocator allocator;
    private final Page scratch;
    private final TreePath path = new TreePath();
    /** The tree's reads of its top. */
    private final MetaPage.TopReader tops;
    /** The separator to insert into the parent; prefixes of keys, so a key's maximum length suffices. */
    private byte[] separator;
    private byte[] spare;
    private int separatorLength;

    TreeInserter(PageAccess pages, long metaId, MetaPage.TopReader tops, PageAllocator allocator, Page scratch, int maxKeyBytes) {
        this.pages = pages;
        this.metaId = metaId;
        this.tops = tops;
        this.allocator = allocator;
        this.scratch = scratch;
        this.separator = new byte[maxKeyBytes];
        this.spare = new byte[maxKeyBytes];
    }

    /** Puts {@code key -> value} (both validated by the caller); true when it replaced a value. */
    boolean put(byte[] key, byte[] value) {
        path.descend(pages, tops.read(pages), key);
        int pageSize = pages.pageSize();
        boolean replaced = false;
        long rightId = PageId.NONE;
        Page leaf = path.acquireLeafForWrite(pages);
        try {
            int pos = LeafPage.search(leaf, key);
            if (pos >= 0) {
                replaced = true;
                int offset = SlottedPage.slot(leaf, pos);
                boolean inline = LeafPage.isInline(leaf, offset);
                if (inline && LeafPage.valueLength(leaf, offset) == value.length) {
                    // same key, same length: the cell keeps its size and stays inline
                    leaf.putBytes(LeafPage.valueOffset(leaf, offset), value, 0, value.length);
                    return true;
                }
                checkRoom(leaf, key, value, inline ? 0 : OverflowChain.pageCount(pageSize, LeafPage.valueLength(leaf, offset)),
                        LeafPage.cellSize(leaf, offset) + SlottedPage.SLOT_BYTES);
                if (!inline) OverflowChain.free(pages, allocator, LeafPage.overflowId(leaf, offset));
                SlottedPage.remove(leaf, pos);
            } else {
                checkRoom(leaf, key, value, 0, 0);
                pos = -(pos + 1);
            }
            boolean inline = LeafPage.isInline(pageSize, key.length, value.length);
            long overflowId = inline ? PageId.NONE : OverflowChain.write(pages, allocator, value);
            int cellBytes = LeafPage.cellSize(pageSize, key.length, value.length);
            if (SlottedPage.fits(leaf, cellBytes)) {
                int offset = SlottedPage.insert(leaf, pos, cellBytes, SlottedPage.keyHead(key, key.length), scratch);
                LeafPage.writeCell(leaf, offset, key, value, overflowId);
            } else {
                rightId = allocator.allocate();
                Page right = pages.acquireNew(rightId);
                try {
                    splitLeaf(leaf, right, pos, key, value, overflowId);
                } finally {
                    pages.releaseWrite(right);
                }
            }
        } finally {
            pages.releaseWrite(leaf);
        }
        if (rightId != PageId.NONE) insertSeparator(rightId);
        if (!replaced) {
            Page meta = pages.acquireWrite(metaId);
            try {
                MetaPage.entryCount(meta, MetaPage.entryCount(meta) + 1);
            } finally {
                pages.releaseWrite(meta);
            }
        }
        return replaced;
    }

    /**
     * Refuses the put, before it changes anything, when the file may lack the pages it takes: the value's overflow
     * chain, and when the cell does not fit {@code leaf} (which gets back {@code oldCellBytes} of the cell it
     * replaces) a split of every page on the path plus a new root; less the {@code freedChain} pages of the value it
     * replaces, freed first and then reused.
     */
    private void checkRoom(Page leaf, byte[] key, byte[] value, int freedChain, int oldCellBytes) {
        int pageSize = pages.pageSize();
        int chain = LeafPage.isInline(pageSize, key.length, value.length) ? 0 : OverflowChain.pageCount(pageSize, value.length);
        boolean fits = SlottedPage.freeBytes(leaf) + oldCellBytes >= LeafPage.cellSize(pageSize, key.length, value.length) + SlottedPage.SLOT_BYTES;
        allocator.checkRoom((long) chain + (fits ? 0 : path.depth() + 2), freedChain);
    }

    /** Splits the full {@code leaf} and the new cell at {@code pos} into {@code leaf} and the new page {@code right}. */
    private void splitLeaf(Page leaf, Page right, int pos, byte[] key, byte[] value, long overflowId) {
        leaf.copyTo(scratch);
        int count = SlottedPage.count(scratch);
        int newBytes = LeafPage.cellSize(leaf.size(), key.length, value.length);
        int leftCount = leafSplitPoint(count, pos, newBytes + SlottedPage.SLOT_BYTES);
        SlottedPage.reset(leaf);
        SlottedPage.init(right, PageHeader.TYPE_LEAF);
        // both targets start empty, so appends never compact (and never touch scratch)
        for (int i = 0; i <= count; i++) {
            Page target = i < leftCount ? leaf : right;
            if (i == pos) {
                int offset = SlottedPage.append(target, newBytes, SlottedPage.keyHead(key, key.length), scratch);
                LeafPage.writeCell(target, offset, key, value, overflowId);
            } else {
                SlottedPage.appendCopy(scratch, i < pos ? i : i - 1, target, scratch);
            }
        }
        shortestSeparator(leaf, right);
    }

    /** How many of the count + 1 entries (old cells in {@code scratch} plus the new one) stay in the left page. */
    private int leafSplitPoint(int count, int pos, int newBytes) {
        if (pos == count) return count;
        if (pos == 0) return 1;
        int usable = SlottedPage.usableBytes(scratch.size());
        int total = SlottedPage.usedBytes(scratch) + newBytes;
        int best = -1;
        int bestLarger = Integer.MAX_VALUE;
        int left = 0;
        for (int m = 1; m <= count; m++) {
            int i = m - 1;
            left += i == pos ? newBytes : leafBytes(i < pos ? i : i - 1);
            int larger = Math.max(left, total - left);
            if (larger <= usable && larger < bestLarger) {
                best = m;
                bestLarger = larger;
            }
        }
        if (best < 0) throw new IllegalStateException("no leaf split point fits: " + total + " bytes in " + usable);
        return best;
    }

    private int leafBytes(int cell) {
        return LeafPage.cellSize(scratch, SlottedPage.slot(scratch, cell)) + SlottedPage.SLOT_BYTES;
    }

    /** Sets the separator to the shortest prefix of right's first key that sorts above left's last key. */
    private void shortestSeparator(Page left, Page right) {
        int leftOffset = SlottedPage.slot(left, SlottedPage.count(left) - 1);
        int rightOffset = SlottedPage.slot(right, 0);
        int leftKey = leftOffset + LeafPage.KEY_OFFSET;
        int rightKey = rightOffset + LeafPage.KEY_OFFSET;
        int rightLength = LeafPage.keyLength(right, rightOffset);
        int shorter = Math.min(LeafPage.keyLength(left, leftOffset), rightLength);
        int common = 0;
        while (common < shorter && left.getByte(leftKey + common) == right.getByte(rightKey + common)) common++;
        // left's last key sorts below right's first, so right's key is longer than the common prefix
        assert common < rightLength : "leaf split left keys out of order";
        separatorLength = common + 1;
        right.getBytes(rightKey, separator, 0, separatorLength);
    }

    /** Inserts the separator and {@code rightChild} into the parents on the path, splitting them as needed. */
    private void insertSeparator(long rightChild) {
        for (int level = path.depth() - 1; level >= 0; level--) {
            long newRight;
            Page parent = pages.acquireWrite(path.pageId(level));
            try {
                int pos = path.childIndex(level);
                int cellBytes = InnerPage.cellSize(separatorLength);
                if (SlottedPage.fits(parent, cellBytes)) {
                    int offset = SlottedPage.insert(parent, pos, cellBytes, SlottedPage.keyHead(separator, separatorLength), scratch);
                    InnerPage.writeCell(parent, offset, separator, separatorLength, rightChild);
                    return;
                }
                newRight = allocator.allocate();
                Page right = pages.acquireNew(newRight);
                try {
                    splitInner(parent, right, pos, rightChild);
                } finally {
                    pages.releaseWrite(right);
                }
            } finally {
                pages.releaseWrite(parent);
            }
            rightChild = newRight;
        }
        growRoot(rightChild);
    }

    /**
     * Splits the full inner page {@code page} plus the new cell (separator, {@code newChild}) at {@code pos} around
     * one promoted cell: its key becomes the separator for the parent, its child the right page's first child.
     */
    private void splitInner(Page page, Page right, int pos, long newChild) {
        page.copyTo(scratch);
        int count = SlottedPage.count(scratch);
        int newBytes = InnerPage.cellSize(separatorLength);
        int promoted = innerSplitPoint(count, pos, newBytes + SlottedPage.SLOT_BYTES);
        SlottedPage.reset(page);
        InnerPage.firstChild(page, InnerPage.firstChild(scratch));
        SlottedPage.init(right, PageHeader.TYPE_INNER);
        int promotedLength = separatorLength;
        for (int i = 0; i <= count; i++) {
            int source = i == pos ? -1 : SlottedPage.slot(scratch, i < pos ? i : i - 1);
            if (i == promoted) {
                if (source < 0) {
                    InnerPage.firstChild(right, newChild);
                } else {
                    InnerPage.firstChild(right, scratch.getLong(source + InnerPage.CHILD_OFFSET));
                    promotedLength = InnerPage.keyLength(scratch, source);
                    scratch.getBytes(source + InnerPage.KEY_OFFSET, spare, 0, promotedLength);
                }
                continue;
            }
            Page target = i < promoted ? page : right;
            if (source < 0) {
                int offset = SlottedPage.append(target, newBytes, SlottedPage.keyHead(separator, separatorLength), scratch);
                InnerPage.writeCell(target, offset, separator, separatorLength, newChild);
            } else {
                SlottedPage.appendCopy(scratch, i < pos ? i : i - 1, target, scratch);
            }
        }
        if (promoted != pos) {
            byte[] swap = separator;
            separator = spare;
            spare = swap;
        }
        separatorLength = promotedLength;
    }

    /** Which of the count + 1 cells (old ones in {@code scratch} plus the new one) moves up to the parent. */
    private int innerSplitPoint(int count, int pos, int newBytes) {
        if (count >= 2 && pos == count) return count - 1;
        if (count >= 2 && pos == 0) return 1;
        int usable = SlottedPage.usableBytes(scratch.size());
        int total = SlottedPage.usedBytes(scratch) + newBytes;
        int best = -1;
        int bestLarger = Integer.MAX_VALUE;
        int left = 0;
        for (int p = 0; p <= count; p++) {
            int bytes = p == pos ? newBytes : innerBytes(p < pos ? p : p - 1);
            int larger = Math.max(left, total - left - bytes);
            boolean bothSidesKeyed = p > 0 && p < count;
            if (larger <= usable && (bothSidesKeyed || count < 2) && larger < bestLarger) {
                best = p;
                bestLarger = larger;
            }
            left += bytes;
        }
        if (best < 0) throw new IllegalStateException("no inner split point fits: " + total + " bytes in " + usable);
        return best;
    }

    private int innerBytes(int cell) {
        return InnerPage.cellSize(scratch, SlottedPage.slot(scratch, cell)) + SlottedPage.SLOT_BYTES;
    }

    /** The root split: a new root above the old one and {@code rightChild}, separated by the separator. */
    private void growRoot(long rightChild) {
        long oldRoot = path.depth() > 0 ? path.pageId(0) : path.leafId();
        long rootId = allocator.allocate();
        Page root = pages.acquireNew(rootId);
        try {
            SlottedPage.init(root, PageHeader.TYPE_INNER);
            InnerPage.firstChild(root, oldRoot);
            int offset = SlottedPage.append(root, InnerPage.cellSize(separatorLength),
                    SlottedPage.keyHead(separator, separatorLength), scratch);
            InnerPage.writeCell(root, offset, separator, separatorLength, rightChild);
        } finally {
            pages.releaseWrite(root);
        }
        Page meta = pages.acquireWrite(metaId);
        try {
            MetaPage.root(meta, rootId);
            MetaPage.height(meta, MetaPage.height(meta) + 1);
        } finally {
            pages.releaseWrite(meta);
        }
    }
}
