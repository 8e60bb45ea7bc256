package dev.varve.core.store;

import dev.varve.core.page.PageHeader;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/** CRC32C of a page image with its own CRC field taken as zero (see {@link PageHeader}). */
public final class PageChecksum {
    private PageChecksum() {
    }

    /** The checksum of {@code size} bytes of {@code buf} at {@code offset}; {@code buf}'s position is untouched. */
    public static int compute(ByteBuffer buf, int offset, int size) {
        CRC32C crc = new CRC32C();
        ByteBuffer b = buf.duplicate();
        b.limit(offset + PageHeader.CRC_OFFSET).position(offset);
        crc.update(b);
        b.limit(offset + size).position(offset + PageHeader.CRC_OFFSET + 4);
        crc.update(b);
        return (int) crc.getValue();
    }

    /** Stores the checksum into the page's header. */
    public static void stamp(ByteBuffer buf, int offset, int size) {
        buf.duplicate().order(ByteOrder.LITTLE_ENDIAN).putInt(offset + PageHeader.CRC_OFFSET, compute(buf, offset, size));
    }

    /** The checksum stored in the page's header. */
    public static int stored(ByteBuffer buf, int offset) {
        return buf.duplicate().order(ByteOrder.LITTLE_ENDIAN).getInt(offset + PageHeader.CRC_OFFSET);
    }

    /** The page id stored in the page's header. */
    public static long storedPageId(ByteBuffer buf, int offset) {
        return buf.duplicate().order(ByteOrder.LITTLE_ENDIAN).getLong(offset + PageHeader.PAGE_ID_OFFSET);
    }
}
