package dev.varve.core.tree;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;

/**
 * Layout of a partition's meta page (index 0 of the file, {@link PageHeader#TYPE_META}): where the tree starts and
 * how the file's pages are accounted for. Everything the tree needs is here, so a reader over past page versions
 * finds the past tree by reading the past meta page.
 *
 * <pre>
 *  0       32      36        40       48          52       56         64          68         72           80
 * +-------+-------+---------+--------+-----------+--------+----------+-----------+----------+------------+-- zero
 * |header | magic | version | root   | pageCount | height | freeHead | freeCount | erasedFrom | entryCount |
 * +-------+-------+---------+--------+-----------+--------+----------+-----------+------------+------------+
 * </pre>
 * {@code root} is a page id; {@code pageCount} the next page index to append (pages [0, pageCount) exist);
 * {@code height} counts levels, 1 when the root is a leaf; {@code freeHead} is the first page of the free list
 * ({@link PageId#NONE} when empty); pages [{@code erasedFrom}, pageCount) are free without being on the list — what
 * a {@code clear()} left, so emptying a partition touches two pages however large it was (0: no such range).
 * {@code freeCount} counts both kinds.
 *
 * <p>Format versions: 1 — initial layout; 2 — slots carry key heads ({@link SlottedPage}). A build reads only its own
 * version: a store of another is refused at open, naming both.
 */
final class MetaPage {
    /** "VBPT" read as a little-endian int. */
    static final int MAGIC = 0x54504256;
    static final int VERSION = 2;

    static final int MAGIC_OFFSET = PageHeader.SIZE;
    static final int VERSION_OFFSET = 36;
    static final int ROOT_OFFSET = 40;
    static final int PAGE_COUNT_OFFSET = 48;
    static final int HEIGHT_OFFSET = 52;
    static final int FREE_HEAD_OFFSET = 56;
    static final int FREE_COUNT_OFFSET = 64;
    static final int ERASED_FROM_OFFSET = 68;
    static final int ENTRY_COUNT_OFFSET = 72;
    static final int END = 80;

    /** The meta page is always page 0 of its file. */
    static final int META_INDEX = 0;

    private MetaPage() {
    }

    /** Writes a fresh meta page describing a tree whose only page is the empty root leaf {@code root}. */
    static void init(Page meta, long root, int pageCount) {
        meta.type(PageHeader.TYPE_META);
        meta.zero(PageHeader.SIZE, meta.size() - PageHeader.SIZE);
        meta.putInt(MAGIC_OFFSET, MAGIC);
        meta.putInt(VERSION_OFFSET, VERSION);
        root(meta, root);
        pageCount(meta, pageCount);
        height(meta, 1);
        freeHead(meta, PageId.NONE);
        freeCount(meta, 0);
        entryCount(meta, 0);
    }

    /**
     * Throws unless {@code meta} is a meta page of a known format version whose tree height its file can hold: each
     * level is a page of its own in [1, pageCount), so a height beyond that is damage — and would size the per-level
     * arrays of every reader of the tree (a height of two billion, 24 GB), where the file's pages bound it.
     */
    static void check(Page meta, long pageId) {
        if (meta.type() != PageHeader.TYPE_META)
            throw new CorruptTreeException("expected a meta page, found type " + PageHeader.typeName(meta.type()), pageId);
        if (meta.getInt(MAGIC_OFFSET) != MAGIC)
            throw new CorruptTreeException("bad meta magic 0x" + Integer.toHexString(meta.getInt(MAGIC_OFFSET)), pageId);
        refuseOtherVersion(meta, pageId);
        int height = height(meta);
        int pageCount = pageCount(meta);
        if (height < 1 || height > (long) pageCount - 1)
            throw new CorruptTreeException("tree height " + height + " in a file of " + pageCount + " pages (at most one level per page but the meta"
                    + " page)", pageId);
    }

    /** Throws unless the meta page {@code meta} (its magic checked) is of the format version this build reads. */
    static void refuseOtherVersion(Page meta, long pageId) {
        if (meta.getInt(VERSION_OFFSET) != VERSION)
            throw new CorruptTreeException("unsupported B+tree format version " + meta.getInt(VERSION_OFFSET) + " (this build reads version "
                    + VERSION + "): written by another release; carry the data across with that release's varve dump and this one's varve load", pageId);
    }

    static long root(Page meta) {
        return meta.getLong(ROOT_OFFSET);
    }

    static void root(Page meta, long root) {
        meta.putLong(ROOT_OFFSET, root);
    }

    static int pageCount(Page meta) {
        return meta.getInt(PAGE_COUNT_OFFSET);
    }

    static void pageCount(Page meta, int pageCount) {
        meta.putInt(PAGE_COUNT_OFFSET, pageCount);
    }

    /**
     * Where a descent starts: the root page and the number of levels, and the meta page they were read from (released):
     * the descent finds the root as child 0 of it ({@link PageAccess#acquireReadChild}), and the next read of the top
     * passes it back ({@link PageAccess#acquireReadAgain}), so a tree's two hottest pages are not looked up in the page
     * table for every operation.
     */
    record Top(long root, int height, Page meta) {
    }

    /** {@link #top(PageAccess, long, Page)} with no meta page from before. */
    static Top top(PageAccess pages, long metaId) {
        return top(pages, metaId, null);
    }

    /**
     * Reads the root and height from meta page {@code metaId} under its read latch: the pair is consistent, as a root
     * split or collapse changes both under the write latch. {@code lastMeta} is the meta page of an earlier top, or
     * null.
     *
     * @throws CorruptTreeException when the height is below 1 (a tree has at least its root leaf)
     */
    private static Top top(PageAccess pages, long metaId, Page lastMeta) {
        long root;
        int height;
        Page meta = pages.acquireReadAgain(lastMeta, metaId);
        try {
            root = root(meta);
            height = height(meta);
        } finally {
            pages.releaseRead(meta);
        }
        if (height < 1) throw new CorruptTreeException("tree height " + height, metaId);
        return new Top(root, height, meta);
    }

    /**
     * One tree's reads of its top, shared by its readers and its writer: each passes back the meta page the last one
     * found. The hint is written without synchronization, and only when it moved, since readers on both cores share
     * its line; a lost or stale write costs one page-table lookup.
     */
    static final class TopReader {
        private final long metaId;
        private Page lastMeta;

        TopReader(long metaId) {
            this.metaId = metaId;
        }

        Top read(PageAccess pages) {
            Page last = lastMeta;
            long stamp = last == null ? -1 : pages.peekAgain(last, metaId);
            if (stamp >= 0) { // without a pin where the source allows: every operation on the tree reads this page
                long root = root(last);
                int height = height(last);
                if (height >= 1 && pages.validate(stamp)) return new Top(root, height, last);
            }
            Top top = top(pages, metaId, lastMeta);
            if (top.meta() != lastMeta) lastMeta = top.meta();
            return top;
        }
    }

    static int height(Page meta) {
        return meta.getInt(HEIGHT_OFFSET);
    }

    static void height(Page meta, int height) {
        meta.putInt(HEIGHT_OFFSET, height);
    }

    static long freeHead(Page meta) {
        return meta.getLong(FREE_HEAD_OFFSET);
    }

    static void freeHead(Page meta, long head) {
        meta.putLong(FREE_HEAD_OFFSET, head);
    }

    static int erasedFrom(Page meta) {
        return meta.getInt(ERASED_FROM_OFFSET);
    }

    static void erasedFrom(Page meta, int index) {
        meta.putInt(ERASED_FROM_OFFSET, index);
    }

    static int freeCount(Page meta) {
        return meta.getInt(FREE_COUNT_OFFSET);
    }

    static void freeCount(Page meta, int count) {
        meta.putInt(FREE_COUNT_OFFSET, count);
    }

    static long entryCount(Page meta) {
        return meta.getLong(ENTRY_COUNT_OFFSET);
    }

    static void entryCount(Page meta, long count) {
        meta.putLong(ENTRY_COUNT_OFFSET, count);
    }
}
