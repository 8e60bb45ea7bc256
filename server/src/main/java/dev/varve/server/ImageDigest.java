package dev.varve.server;

import dev.varve.engine.TableOptions;

import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

/**
 * What a snapshot's page image holds, summed up: its tables (name, placement, partition count, entries), its pages,
 * and a CRC32C over every table and every page's file id, index and stored CRC, in shipping order. The sender
 * computes it over what it sent, the receiver over what it wrote; they must agree, which catches a frame lost,
 * repeated or reordered though each frame passed its own CRC, and a page whose bytes changed on the way though it
 * came with a CRC of its own that matches them (a PAGES frame's CRC covers only where its pages go): the receiver
 * checks each page's bytes against its stored CRC as it writes it, and the digest checks those CRCs against the ones
 * the sender read.
 */
final class ImageDigest {
    private final CRC32C crc = new CRC32C();
    private long pages;
    private long entries;
    private int tables;

    void table(String name, TableOptions options, long tableEntries) {
        byte[] b = name.getBytes(StandardCharsets.UTF_8);
        updateInt(b.length);
        crc.update(b);
        crc.update(options.callerPlaced() ? 1 : 0);
        updateInt(options.partitions());
        updateInt((int) (tableEntries >>> 32));
        updateInt((int) tableEntries);
        entries += tableEntries;
        tables++;
    }

    /** A page of file {@code fileId} at {@code index}, whose header stores CRC {@code pageCrc} (which its bytes match). */
    void page(int fileId, int index, int pageCrc) {
        updateInt(fileId);
        updateInt(index);
        updateInt(pageCrc);
        pages++;
    }

    private void updateInt(int v) {
        crc.update(v >>> 24);
        crc.update(v >>> 16);
        crc.update(v >>> 8);
        crc.update(v);
    }

    long pages() {
        return pages;
    }

    long entries() {
        return entries;
    }

    int tables() {
        return tables;
    }

    int crc() {
        return (int) crc.getValue();
    }

    /** Null when the sender's END figures agree with this digest, else what differs. */
    String mismatch(long otherPages, int otherTables, int otherCrc) {
        if (pages == otherPages && tables == otherTables && crc() == otherCrc) return null;
        return String.format("%d tables, %d pages, digest %08x against %d tables, %d pages, digest %08x",
                tables, pages, crc(), otherTables, otherPages, otherCrc);
    }
}
