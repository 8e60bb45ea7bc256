package dev.varve.core.tree;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.PartitionFullException;
import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageStore;
import java.nio.ByteBuffer;

/**
 * The ordered key-value tree of one partition file: variable-length {@code byte[]} keys in unsigned lexicographic
 * order, {@code byte[]} values, everything in the file's pages. Page 0 is the meta page ({@link MetaPage}); leaves
 * ({@link LeafPage}) hold the entries, inner pages ({@link InnerPage}) route to them, values too large to live
 * inline go to overflow chains ({@link OverflowPage}), and freed pages wait on a free list ({@link FreePage}).
 *
 * <p>Limits:
 * <ul>
 *   <li>keys: 0 to {@link #maxKeyBytes(int) pageSize / 4} bytes (1024 at 4 KiB pages, 256 at 1 KiB, 4096 at
 *       16 KiB); a page then always holds at least three cells, and at least four once keys are 28 bytes shorter;</li>
 *   <li>values: 0 to {@link #MAX_VALUE_BYTES} (1 MiB); a value is stored inline in its leaf when
 *       {@code key + value <= }{@link #maxInlineBytes(int)} (996 bytes at 4 KiB pages) or the value is at most
 *       8 bytes, otherwise in a chain of overflow pages;</li>
 *   <li>page size: a power of two from 1 KiB to 32 KiB (in-page offsets are 16-bit).</li>
 * </ul>
 *
 * <p>Concurrency: one writer per partition, and readers never run while it writes: the caller's partition lock
 * excludes them. Reads ({@link #get}, {@link #scan}, {@link #size}, {@link #verify}) keep no state in this object
 * but a hint of where the meta page is, so any number may run at once, and a tree opened over a read-only
 * {@link PageAccess} of past page versions reads the past tree with the same code. Page latches are taken one step
 * at a time and only guard against the checkpointer copying a page mid-change; write latches are taken only on pages
 * that change.
 *
 * <p>Determinism: the same operations on the same page images produce byte-identical page images (no time, no
 * randomness, no hash order; removed cells, freed pages and the gap inside pages are zeroed), which WAL replay
 * relies on.
 */
public final class BPlusTree {
    /** Largest value, in bytes. */
    public static final int MAX_VALUE_BYTES = 1 << 20;
    /** Smallest supported page size. */
    public static final int MIN_PAGE_SIZE = 1 << 10;
    /** Largest supported page size. */
    public static final int MAX_PAGE_SIZE = 1 << 15;
    /**
     * Most pages a partition file holds, its meta page included: page indexes are 31-bit (8 TiB at 4 KiB pages). A put
     * that may need more is refused with {@link PartitionFullException} before it changes anything.
     */
    public static final int MAX_PAGES = Integer.MAX_VALUE;

    private final PageAccess pages;
    private final int fileId;
    private final long metaId;
    private final int maxKeyBytes;
    /** Reads the root and height for {@link #get} and the writes. */
    private final MetaPage.TopReader tops;
    /** Writer side; kept here so that {@link #pagesLeft} reads its limit. */
    private final PageAllocator allocator;
    /** Created on the first write: readers, including read-only past-state trees, never need them. */
    private TreeInserter inserter;
    private TreeRemover remover;

    /**
     * Opens the tree of file {@code fileId}.
     *
     * @throws CorruptTreeException when page 0 is not a meta page of a known format
     */
    public BPlusTree(PageAccess pages, int fileId) {
        checkPageSize(pages.pageSize());
        this.pages = pages;
        this.fileId = fileId;
        this.metaId = PageId.of(fileId, MetaPage.META_INDEX);
        this.tops = new MetaPage.TopReader(metaId);
        this.maxKeyBytes = maxKeyBytes(pages.pageSize());
        this.allocator = new PageAllocator(pages, fileId);
        Page meta = pages.acquireRead(metaId);
        try {
            MetaPage.check(meta, metaId);
        } finally {
            pages.releaseRead(meta);
        }
    }

    /** Writes an empty tree into file {@code fileId}: the meta page (page 0) and an empty root leaf (page 1). */
    public static void format(PageAccess pages, int fileId) {
        checkPageSize(pages.pageSize());
        long rootId = PageId.of(fileId, MetaPage.META_INDEX + 1);
        Page root = pages.acquireNew(rootId);
        try {
            SlottedPage.init(root, PageHeader.TYPE_LEAF);
        } finally {
            pages.releaseWrite(root);
        }
        Page meta = pages.acquireNew(PageId.of(fileId, MetaPage.META_INDEX));
        try {
            MetaPage.init(meta, rootId, 2);
        } finally {
            pages.releaseWrite(meta);
        }
    }

    /** Largest key, in bytes, for a page size: a quarter page (1024 at 4 KiB). */
    public static int maxKeyBytes(int pageSize) {
        return pageSize / 4;
    }

    /**
     * Largest {@code key.length + value.length} kept inline in a leaf (996 at 4 KiB); larger values overflow, except
     * values of up to 8 bytes (the size of an overflow link), which always stay inline.
     */
    public static int maxInlineBytes(int pageSize) {
        return LeafPage.maxInlineBytes(pageSize);
    }

    /** The file this tree lives in. */
    public int fileId() {
        return fileId;
    }

    /** The value of {@code key}, or null when absent. */
    public byte[] get(byte[] key) {
        return atLeaf(key, VALUE);
    }

    /**
     * Pages of the overflow chain holding {@code key}'s value: what removing or replacing it frees (and so dirties,
     * each freed page is erased); 0 for a value inline in its leaf, -1 when the key is absent. Reads the leaf only,
     * never the chain.
     */
    public int overflowPages(byte[] key) {
        Integer pages = atLeaf(key, OVERFLOW_PAGES);
        return pages == null ? -1 : pages;
    }

    /** Pages of the longest overflow chain (a value of {@link #MAX_VALUE_BYTES}) at {@code pageSize}. */
    public static int maxOverflowPages(int pageSize) {
        return overflowPagesAtMost(pageSize, MAX_VALUE_BYTES);
    }

    /** The most pages the overflow chain of a value of at most {@code valueBytes} takes at {@code pageSize}. */
    public static int overflowPagesAtMost(int pageSize, int valueBytes) {
        return OverflowChain.pageCount(pageSize, Math.min(Math.max(valueBytes, 0), MAX_VALUE_BYTES));
    }

    /** What {@link #getUnsettled} returns when its read cannot stand: the caller reads again with {@link #get}. */
    public static final byte[] UNSETTLED = new byte[0];

    /**
     * {@link #get} without a pin or a latch, the leaf included, for a caller that takes no lock against this tree's
     * writers but checks afterwards that none ran (the engine's partitions count their writers' holds): every page is
     * read by stamp ({@link PageAccess#peekChild}) and checked after, and an inline value is copied out before the
     * leaf's check. Returns the value, null when the key is absent, or {@link #UNSETTLED} (the same array, compared by
     * identity) when a page could not be stamped (no hint, or the page is not in memory), eviction took one meanwhile,
     * the value lies on overflow pages, or bytes changing under the read made it throw. Nothing it returns is the
     * tree's unless the caller's check then finds no writer ran. Never loads or pins a page but the meta page.
     */
    public byte[] getUnsettled(byte[] key) {
        checkKey(key);
        try {
            MetaPage.Top top = tops.read(pages);
            long id = top.root();
            int height = top.height();
            Page parent = top.meta();
            int index = 0;
            for (int level = 0; level < height; level++) {
                long stamp = pages.peekChild(parent, index, id);
                if (stamp < 0) return UNSETTLED;
                Page page = pages.stampedChild(parent, index, stamp);
                if (level == height - 1) {
                    byte[] value = page.type() == PageHeader.TYPE_LEAF ? inlineValue(page, key) : UNSETTLED;
                    return pages.validate(page, stamp) ? value : UNSETTLED;
                }
                if (page.type() != PageHeader.TYPE_INNER) return UNSETTLED;
                index = InnerPage.childIndex(page, key);
                id = InnerPage.child(page, index);
                if (!pages.validate(page, stamp)) return UNSETTLED;
                parent = page;
            }
            return UNSETTLED; // a height below 1: the meta page changed under the read
        } catch (RuntimeException | AssertionError e) { // a writer's bytes, or another page's: the caller reads again
            return UNSETTLED;
        }
    }

    /** {@code key}'s value in {@code leaf} when it is inline, null when the key is absent, else {@link #UNSETTLED}. */
    private static byte[] inlineValue(Page leaf, byte[] key) {
        int pos = LeafPage.search(leaf, key);
        if (pos < 0) return null;
        int offset = SlottedPage.slot(leaf, pos);
        int valueLength = LeafPage.valueLength(leaf, offset);
        if (!LeafPage.isInline(leaf.size(), key.length, valueLength)) return UNSETTLED;
        return leaf.getBytes(LeafPage.valueOffset(leaf, offset), valueLength);
    }

    /** What {@link #atLeaf} reads of the entry at {@code offset} of the read-latched leaf {@code page}. */
    private interface LeafRead<T> {
        T read(PageAccess pages, Page page, int offset, byte[] key);
    }

    private static final LeafRead<byte[]> VALUE = (pages, page, offset, key) -> {
        int valueLength = LeafPage.valueLength(page, offset);
        if (LeafPage.isInline(page.size(), key.length, valueLength)) return page.getBytes(LeafPage.valueOffset(page, offset), valueLength);
        return OverflowChain.read(pages, LeafPage.overflowId(page, offset), valueLength);
    };

    private static final LeafRead<Integer> OVERFLOW_PAGES = (pages, page, offset, key) -> {
        int valueLength = LeafPage.valueLength(page, offset);
        return LeafPage.isInline(page.size(), key.length, valueLength) ? 0 : OverflowChain.pageCount(page.size(), valueLength);
    };

    /** Descends to {@code key}'s leaf and returns what {@code read} reads of its entry, or null when absent. */
    private <T> T atLeaf(byte[] key, LeafRead<T> read) {
        checkKey(key);
        MetaPage.Top top = tops.read(pages);
        long id = top.root();
        int height = top.height();
        Page parent = top.meta(); // the root is child 0 of the meta page
        int index = 0;
        for (int level = 0; ; level++) {
            long stamp = level < height - 1 ? pages.peekChild(parent, index, id) : -1;
            if (stamp >= 0) { // an inner page read without a pin: a pin and an unpin write a line every reader shares
                Page page = pages.stampedChild(parent, index, stamp);
                int childIndex = -1;
                long child = 0;
                try {
                    if (page.type() == PageHeader.TYPE_INNER) {
                        childIndex = InnerPage.childIndex(page, key);
                        child = InnerPage.child(page, childIndex);
                    }
                } catch (RuntimeException | AssertionError e) {
                    childIndex = -1; // the frame took another page under the read, or the page is bad: the read below tells
                }
                if (childIndex >= 0 && pages.validate(page, stamp)) {
                    index = childIndex;
                    id = child;
                    parent = page;
                    continue;
                }
            }
            Page page = pages.acquireReadChild(parent, index, id);
            try {
                int type = page.type();
                if (type == PageHeader.TYPE_INNER && level < height - 1) {
                    index = InnerPage.childIndex(page, key);
                    id = InnerPage.child(page, index);
                    parent = page;
                    continue;
                }
                if (type != PageHeader.TYPE_LEAF || level != height - 1)
                    throw new CorruptTreeException("unexpected " + PageHeader.typeName(type) + " page at depth " + level
                            + " of a tree of height " + height, id);
                int pos = LeafPage.search(page, key);
                return pos < 0 ? null : read.read(pages, page, SlottedPage.slot(page, pos), key);
            } finally {
                pages.releaseRead(page);
            }
        }
    }

    /**
     * Maps {@code key} to {@code value}.
     *
     * @return true when it replaced a value, false when the key was new
     * @throws IllegalArgumentException for a null or oversized key or value; nothing is changed then
     * @throws PartitionFullException when the file may lack the pages the put takes ({@link #MAX_PAGES}); nothing is
     *         changed then
     */
    public boolean put(byte[] key, byte[] value) {
        checkKey(key);
        if (value == null) throw new IllegalArgumentException("value is null");
        if (value.length > MAX_VALUE_BYTES)
            throw new IllegalArgumentException("value of " + value.length + " bytes exceeds the maximum of " + MAX_VALUE_BYTES + " bytes");
        return inserter().put(key, value);
    }

    /**
     * Removes {@code key}; merges and frees pages that it leaves underfull or empty.
     *
     * @return true when the key was present
     */
    public boolean remove(byte[] key) {
        checkKey(key);
        return remover().remove(key);
    }

    /** Number of entries. */
    public long size() {
        Page meta = pages.acquireRead(metaId);
        try {
            return MetaPage.entryCount(meta);
        } finally {
            pages.releaseRead(meta);
        }
    }

    /** Pages in the file, meta and free pages included. */
    public int pageCount() {
        Page meta = pages.acquireRead(metaId);
        try {
            return MetaPage.pageCount(meta);
        } finally {
            pages.releaseRead(meta);
        }
    }

    /**
     * Pages writes may still take before the file reaches its limit: those it may grow by plus its free ones. Reads
     * the meta page; the caller excludes the writer, or takes the answer as a hint.
     */
    public long pagesLeft() {
        return allocator.room();
    }

    /**
     * Pages left below the limit once {@code puts} puts of {@code valueBytes} value bytes in all (any keys, in any
     * order) have taken the most they may; negative when they might not fit. What a caller asks before it commits to
     * the puts, as the engine does before it logs them: each put checks again, exactly, before it changes a page.
     */
    public long roomAfterPuts(int puts, long valueBytes) {
        if (puts < 0 || valueBytes < 0) throw new IllegalArgumentException("puts " + puts + " and value bytes " + valueBytes + " must be >= 0");
        return allocator.roomAfterPuts(puts, valueBytes);
    }

    /** Most pages this file may hold: {@link #MAX_PAGES}, unless a test lowered it ({@link #limitPages}). */
    public int maxPages() {
        return allocator.maxPages();
    }

    /** The test seam: the file holds at most {@code maxPages} pages, so tests reach the limit without writing 8 TiB. */
    void limitPages(int maxPages) {
        allocator.maxPages(maxPages);
    }

    /** Pages on the free list. */
    public int freePageCount() {
        Page meta = pages.acquireRead(metaId);
        try {
            return MetaPage.freeCount(meta);
        } finally {
            pages.releaseRead(meta);
        }
    }

    /** Levels of the tree, 1 when the root is a leaf. */
    public int height() {
        Page meta = pages.acquireRead(metaId);
        try {
            return MetaPage.height(meta);
        } finally {
            pages.releaseRead(meta);
        }
    }

    /**
     * Removes every entry: all pages but the meta page go to the free list (page 1 becomes the empty root). The file
     * keeps its length. Used when a partition is destroyed.
     */
    public void clear() {
        remover().clear();
    }

    /**
     * Up to {@code maxEntries} entries with {@code from <= key} ({@code from < key} when not
     * {@code fromInclusive}) and {@code key < toExclusive}, in key order; a null bound is open. Fewer once their keys
     * and values reach 256 KiB (at least one entry), so a batch of large values stays small on the heap. Resume with
     * {@code scan(batch.lastKey(), false, toExclusive, n)} while {@link ScanBatch#hasMore()}; no page is held between
     * batches, so writes in between are seen by the next batch.
     */
    public ScanBatch scan(byte[] from, boolean fromInclusive, byte[] toExclusive, int maxEntries) {
        if (maxEntries < 1) throw new IllegalArgumentException("maxEntries must be at least 1, was " + maxEntries);
        return TreeScanner.scan(pages, metaId, from, fromInclusive, toExclusive, maxEntries);
    }

    /**
     * Checks the whole file: page types and ids, slot arrays, key order in and across pages, separator bounds, equal
     * leaf depth, overflow chains, the entry count, and that reachable, free and meta pages add up to the page count.
     *
     * @throws CorruptTreeException describing the first problem found
     */
    public void verify() {
        new TreeVerifier(pages, fileId).verify();
    }

    private void checkKey(byte[] key) {
        if (key == null) throw new IllegalArgumentException("key is null");
        if (key.length > maxKeyBytes)
            throw new IllegalArgumentException("key of " + key.length + " bytes exceeds the maximum of " + maxKeyBytes
                    + " bytes for " + pages.pageSize() + "-byte pages");
    }

    private TreeInserter inserter() {
        if (inserter == null) {
            // one scratch page for both: a write is either an insert or a remove, never both at once
            Page scratch = new Page(ByteBuffer.allocateDirect(pages.pageSize()), 0, pages.pageSize());
            inserter = new TreeInserter(pages, metaId, tops, allocator, scratch, maxKeyBytes);
            remover = new TreeRemover(pages, fileId, tops, allocator, scratch, maxKeyBytes);
        }
        return inserter;
    }

    private TreeRemover remover() {
        inserter();
        return remover;
    }

    private static void checkPageSize(int pageSize) {
        if (pageSize < MIN_PAGE_SIZE || pageSize > MAX_PAGE_SIZE || Integer.bitCount(pageSize) != 1)
            throw new IllegalArgumentException("page size " + pageSize + " is not a power of two in ["
                    + MIN_PAGE_SIZE + ", " + MAX_PAGE_SIZE + "]");
    }

    /**
     * Refuses the tree of partition file {@code fileId} when its meta page on disk (index 0), intact, is of another
     * format version: its pages would be misread. Read straight from the file, so an open can ask before it writes
     * anything; a missing or damaged meta page refuses nothing (recovery restores it, or open finds the damage).
     */
    public static void refuseOtherFormat(PageStore store, int fileId) {
        if (store.pageCount(fileId) == 0) return;
        long metaId = PageId.of(fileId, 0);
        ByteBuffer b = ByteBuffer.allocateDirect(store.pageSize());
        try {
            store.read(metaId, b, 0);
        } catch (CorruptionException e) {
            return;
        }
        Page meta = new Page(b, 0, store.pageSize());
        if (meta.type() == PageHeader.TYPE_META && meta.getInt(MetaPage.MAGIC_OFFSET) == MetaPage.MAGIC) MetaPage.refuseOtherVersion(meta, metaId);
    }
}
