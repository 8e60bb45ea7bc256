package dev.varve.core.tree;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import java.util.Arrays;
import java.util.BitSet;

/**
 * Checks a partition file's tree from the meta page down and its free list, and that every page is accounted for
 * exactly once. Reads only; throws {@link CorruptTreeException} at the first problem. For tests and operator tools,
 * not for hot paths: it copies every key.
 */
final class TreeVerifier {
    private final PageAccess pages;
    private final int fileId;
    private final long metaId;
    private BitSet seen;
    private int pageCount;
    private int height;
    private long entries;

    TreeVerifier(PageAccess pages, int fileId) {
        this.pages = pages;
        this.fileId = fileId;
        this.metaId = PageId.of(fileId, MetaPage.META_INDEX);
    }

    void verify() {
        long root;
        long freeHead;
        int freeCount;
        int erasedFrom;
        long entryCount;
        Page meta = pages.acquireRead(metaId);
        try {
            MetaPage.check(meta, metaId);
            root = MetaPage.root(meta);
            pageCount = MetaPage.pageCount(meta);
            height = MetaPage.height(meta);
            freeHead = MetaPage.freeHead(meta);
            freeCount = MetaPage.freeCount(meta);
            erasedFrom = MetaPage.erasedFrom(meta);
            entryCount = MetaPage.entryCount(meta);
            checkUnusedZero(meta, metaId);
        } finally {
            pages.releaseRead(meta);
        }
        if (pageCount < 2) throw new CorruptTreeException("page count " + pageCount + " below 2", metaId);
        if (height < 1) throw new CorruptTreeException("height " + height + " below 1", metaId);
        seen = new BitSet(pageCount);
        seen.set(MetaPage.META_INDEX);
        walk(root, 0, null, null);
        if (entries != entryCount)
            throw new CorruptTreeException("meta counts " + entryCount + " entries, leaves hold " + entries, metaId);
        int free = 0;
        for (long id = freeHead; id != PageId.NONE; free++) {
            claim(id, "free list");
            Page page = pages.acquireRead(id);
            try {
                if (page.type() != PageHeader.TYPE_FREE)
                    throw new CorruptTreeException("free list holds a " + PageHeader.typeName(page.type()) + " page", id);
                checkUnusedZero(page, id);
                id = FreePage.next(page);
            } finally {
                pages.releaseRead(page);
            }
        }
        if (erasedFrom != 0) {
            if (erasedFrom <= MetaPage.META_INDEX + 1 || erasedFrom >= pageCount)
                throw new CorruptTreeException("erased range starts at " + erasedFrom + " outside the file's " + pageCount + " pages", metaId);
            for (int index = erasedFrom; index < pageCount; index++, free++) claim(PageId.of(fileId, index), "erased range");
        }
        if (free != freeCount) throw new CorruptTreeException("meta counts " + freeCount + " free pages, list and erased range hold " + free, metaId);
        int lost = seen.nextClearBit(0);
        if (lost < pageCount)
            throw new CorruptTreeException("page neither reachable nor free (" + (pageCount - seen.cardinality())
                    + " such pages)", PageId.of(fileId, lost));
    }

    /** Checks the subtree at {@code id}; its keys must lie in [low, high) (null: open). */
    private void walk(long id, int depth, byte[] low, byte[] high) {
        claim(id, "tree");
        long[] children;
        byte[][] separators;
        Page page = pages.acquireRead(id);
        try {
            if (page.pageId() != id) throw new CorruptTreeException("header names page " + PageId.toString(page.pageId()), id);
            int type = page.type();
            boolean leaf = type == PageHeader.TYPE_LEAF;
            if (!leaf && type != PageHeader.TYPE_INNER)
                throw new CorruptTreeException("expected a tree page, found " + PageHeader.typeName(type), id);
            if (leaf != (depth == height - 1))
                throw new CorruptTreeException(PageHeader.typeName(type) + " page at depth " + depth + " of a tree of height " + height, id);
            checkSlots(page, id);
            int count = SlottedPage.count(page);
            byte[] previous = null;
            for (int i = 0; i < count; i++) {
                byte[] key = leaf ? LeafPage.key(page, i) : innerKey(page, i);
                if (previous != null && Arrays.compareUnsigned(previous, key) >= 0)
                    throw new CorruptTreeException("key " + i + " not above key " + (i - 1), id);
                if (low != null && Arrays.compareUnsigned(key, low) < 0)
                    throw new CorruptTreeException("key " + i + " below its separator bound", id);
                if (high != null && Arrays.compareUnsigned(key, high) >= 0)
                    throw new CorruptTreeException("key " + i + " not below its separator bound", id);
                if (key.length > BPlusTree.maxKeyBytes(page.size()))
                    throw new CorruptTreeException("key " + i + " of " + key.length + " bytes is over the limit", id);
                if (SlottedPage.head(page, i) != SlottedPage.keyHead(key, key.length))
                    throw new CorruptTreeException("slot " + i + " holds a key head that is not its key's", id);
                previous = key;
            }
            if (leaf) {
                if (count == 0 && depth > 0) throw new CorruptTreeException("empty leaf below the root", id);
                for (int i = 0; i < count; i++) checkValue(page, id, SlottedPage.slot(page, i));
                entries += count;
                return;
            }
            if (count == 0 && depth == 0) throw new CorruptTreeException("inner root without keys", id);
            children = new long[count + 1];
            separators = new byte[count][];
            for (int i = 0; i <= count; i++) children[i] = InnerPage.child(page, i);
            for (int i = 0; i < count; i++) separators[i] = innerKey(page, i);
        } finally {
            pages.releaseRead(page);
        }
        for (int i = 0; i < children.length; i++) {
            walk(children[i], depth + 1, i == 0 ? low : separators[i - 1], i == separators.length ? high : separators[i]);
        }
    }

    private static byte[] innerKey(Page page, int i) {
        int offset = SlottedPage.slot(page, i);
        return page.getBytes(offset + InnerPage.KEY_OFFSET, InnerPage.keyLength(page, offset));
    }

    /** Slot array and cell area: in bounds, no overlaps, garbage accounted, the gap zero. */
    private void checkSlots(Page page, long id) {
        int size = page.size();
        int count = SlottedPage.count(page);
        int cellStart = SlottedPage.cellStart(page);
        int slotsEnd = SlottedPage.SLOTS_OFFSET + SlottedPage.SLOT_BYTES * count;
        if (slotsEnd > cellStart || cellStart > size)
            throw new CorruptTreeException("slots end at " + slotsEnd + ", cells start at " + cellStart, id);
        if (page.getShort(SlottedPage.RESERVED_OFFSET) != 0) throw new CorruptTreeException("reserved field set", id);
        if (page.type() == PageHeader.TYPE_LEAF && page.getLong(SlottedPage.LINK_OFFSET) != 0)
            throw new CorruptTreeException("leaf link field set", id);
        long[] cells = new long[count];
        int live = 0;
        for (int i = 0; i < count; i++) {
            int offset = SlottedPage.slot(page, i);
            if (offset < cellStart || offset + LeafPage.CELL_HEADER_BYTES > size)
                throw new CorruptTreeException("cell " + i + " at " + offset + " outside [" + cellStart + ", " + size + ")", id);
            int bytes = SlottedPage.cellSize(page, offset);
            if (offset + bytes > size) throw new CorruptTreeException("cell " + i + " runs past the page end", id);
            cells[i] = (long) offset << 32 | (offset + bytes);
            live += bytes;
        }
        Arrays.sort(cells);
        for (int i = 1; i < count; i++) {
            if ((int) cells[i - 1] > (int) (cells[i] >>> 32)) throw new CorruptTreeException("cells overlap at " + (cells[i] >>> 32), id);
        }
        if (live + SlottedPage.garbage(page) != size - cellStart)
            throw new CorruptTreeException("cells (" + live + ") and garbage (" + SlottedPage.garbage(page)
                    + ") do not fill [" + cellStart + ", " + size + ")", id);
        checkUnusedZero(page, id);
    }

    private void checkValue(Page leaf, long id, int offset) {
        int keyLength = LeafPage.keyLength(leaf, offset);
        int valueLength = LeafPage.valueLength(leaf, offset);
        if (valueLength < 0 || valueLength > BPlusTree.MAX_VALUE_BYTES)
            throw new CorruptTreeException("value length " + valueLength + " at cell offset " + offset, id);
        if (LeafPage.isInline(leaf.size(), keyLength, valueLength)) return;
        long overflow = LeafPage.overflowId(leaf, offset);
        int capacity = OverflowPage.capacity(leaf.size());
        int remaining = valueLength;
        while (remaining > 0) {
            if (overflow == PageId.NONE) throw new CorruptTreeException("overflow chain of cell at " + offset + " ends early", id);
            claim(overflow, "overflow chain");
            Page page = pages.acquireRead(overflow);
            try {
                OverflowChain.checkType(page, overflow);
                int length = OverflowPage.length(page);
                if (length != Math.min(capacity, remaining))
                    throw new CorruptTreeException("overflow page holds " + length + " bytes, expected " + Math.min(capacity, remaining), overflow);
                checkUnusedZero(page, overflow);
                remaining -= length;
                long next = OverflowPage.next(page);
                if (remaining == 0 && next != PageId.NONE)
                    throw new CorruptTreeException("overflow chain continues past its value", overflow);
                overflow = next;
            } finally {
                pages.releaseRead(page);
            }
        }
    }

    /** Marks {@code id} as accounted for; each page may be so only once. */
    private void claim(long id, String what) {
        int index = PageId.index(id);
        if (PageId.fileId(id) != fileId || index < 0 || index >= pageCount)
            throw new CorruptTreeException(what + " links to a page outside the file's " + pageCount + " pages", id);
        if (seen.get(index)) throw new CorruptTreeException(what + " reaches a page already accounted for", id);
        seen.set(index);
    }

    /** The range {@link PageLayout#unusedRange} promises to be zero is zero. */
    private static void checkUnusedZero(Page page, long id) {
        long range = PageLayout.unusedRange(page);
        int start = PageLayout.rangeStart(range);
        checkZero(page, start, PageLayout.rangeEnd(range) - start, id, "unused range");
    }

    private static void checkZero(Page page, int offset, int length, long id, String what) {
        for (int i = 0; i < length; i++) {
            if (page.getByte(offset + i) != 0)
                throw new CorruptTreeException(what + " not zero at offset " + (offset + i), id);
        }
    }
}
