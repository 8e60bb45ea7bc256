package dev.varve.core.page;

/**
 * A page address is a plain {@code long}: the file id in the high 32 bits, the page index inside that file in the
 * low 32 bits. A file id in turn is a table id (high 16 bits) and a partition number (low 16 bits); table 0 is the
 * catalog. Static compose/extract helpers only, in the manner of H2's {@code DataUtils.composePagePos}.
 *
 * <pre>
 *  63            48 47            32 31                              0
 * +----------------+----------------+--------------------------------+
 * |    table id    |   partition    |           page index           |
 * +----------------+----------------+--------------------------------+
 * </pre>
 */
public final class PageId {
    /** The page id no page has: used as the "null" link in page chains. */
    public static final long NONE = -1L;
    /** Largest table id that fits the layout. */
    public static final int MAX_TABLE_ID = 0x7FFF; // keeps page ids non-negative
    /** Largest partition number that fits the layout. */
    public static final int MAX_PARTITION = 0xFFFF;

    private PageId() {
    }

    /** The page id of page {@code index} in file {@code fileId}. */
    public static long of(int fileId, int index) {
        return ((long) fileId << 32) | (index & 0xFFFF_FFFFL);
    }

    /** The file id of a page id. */
    public static int fileId(long pageId) {
        return (int) (pageId >>> 32);
    }

    /** The page index (position in its file) of a page id. */
    public static int index(long pageId) {
        return (int) pageId;
    }

    /** The file id of partition {@code partition} of table {@code tableId}. */
    public static int fileId(int tableId, int partition) {
        if (tableId < 0 || tableId > MAX_TABLE_ID) throw new IllegalArgumentException("table id out of range: " + tableId);
        if (partition < 0 || partition > MAX_PARTITION) throw new IllegalArgumentException("partition out of range: " + partition);
        return (tableId << 16) | partition;
    }

    /** The table id of a file id. */
    public static int tableOf(int fileId) {
        return fileId >>> 16;
    }

    /** The partition number of a file id. */
    public static int partitionOf(int fileId) {
        return fileId & 0xFFFF;
    }

    /** "file:index", for messages. */
    public static String toString(long pageId) {
        return pageId == NONE ? "none" : (tableOf(fileId(pageId)) + "/" + partitionOf(fileId(pageId)) + ":" + index(pageId));
    }
}
