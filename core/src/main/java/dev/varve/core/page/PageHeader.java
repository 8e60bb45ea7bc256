package dev.varve.core.page;

/**
 * The header every page starts with, in memory and on disk. The CRC32C covers the whole page with the CRC field
 * itself taken as zero; it is computed when a page is written to its file and checked when it is read back, so
 * nothing read from disk is trusted without it.
 *
 * <pre>
 *  0        8        12      14      16               24               32
 * +--------+--------+-------+-------+----------------+----------------+--- body ...
 * | pageId | crc32c | type  | flags | savedAfter     | reserved       |
 * +--------+--------+-------+-------+----------------+----------------+
 * </pre>
 * {@code savedAfter} is the id of the latest snapshot for which this page's pre-state was archived (Retro's SAC);
 * it is reserved here for the snapshot layer.
 */
public final class PageHeader {
    public static final int PAGE_ID_OFFSET = 0;
    public static final int CRC_OFFSET = 8;
    public static final int TYPE_OFFSET = 12;
    public static final int FLAGS_OFFSET = 14;
    public static final int SAVED_AFTER_OFFSET = 16;
    public static final int RESERVED_OFFSET = 24;
    /** Bytes of header; page bodies start here. */
    public static final int SIZE = 32;

    /** A page never written (all zero). */
    public static final int TYPE_NONE = 0;
    /** Partition meta page (index 0 of every partition file). */
    public static final int TYPE_META = 1;
    /** B+tree inner node. */
    public static final int TYPE_INNER = 2;
    /** B+tree leaf. */
    public static final int TYPE_LEAF = 3;
    /** Overflow page holding part of a large value. */
    public static final int TYPE_OVERFLOW = 4;
    /** A page on the partition's free list. */
    public static final int TYPE_FREE = 5;

    private PageHeader() {
    }

    /** Type name for messages. */
    public static String typeName(int type) {
        switch (type) {
            case TYPE_NONE: return "none";
            case TYPE_META: return "meta";
            case TYPE_INNER: return "inner";
            case TYPE_LEAF: return "leaf";
            case TYPE_OVERFLOW: return "overflow";
            case TYPE_FREE: return "free";
            default: return "type#" + type;
        }
    }
}
