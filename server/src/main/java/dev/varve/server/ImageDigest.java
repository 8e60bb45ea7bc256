package dev.varve.server;

import dev.varve.engine.TableOptions;

import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

/**
 * What a snapshot image holds, summed up: tables, entries, key and value bytes, and a CRC32C over every table (name,
 * placement, partition count), every partition number and every entry (with their lengths) in shipping order. The sender computes it over what it read, the receiver over
 * what it received and again over what its finished store reads back; all three must agree.
 */
final class ImageDigest {
    private final CRC32C crc = new CRC32C();
    private long entries;
    private long bytes;
    private int tables;

    void table(String name, TableOptions options) {
        byte[] b = name.getBytes(StandardCharsets.UTF_8);
        updateInt(b.length);
        crc.update(b);
        crc.update(options.callerPlaced() ? 1 : 0);
        updateInt(options.partitions());
        tables++;
    }

    /** The entries after this call are partition {@code p}'s. */
    void partition(int p) {
        updateInt(p);
    }

    void entry(byte[] key, byte[] value) {
        updateInt(key.length);
        crc.update(key);
        updateInt(value.length);
        crc.update(value);
        entries++;
        bytes += key.length + value.length;
    }

    private void updateInt(int v) {
        crc.update(v >>> 24);
        crc.update(v >>> 16);
        crc.update(v >>> 8);
        crc.update(v);
    }

    long entries() {
        return entries;
    }

    long bytes() {
        return bytes;
    }

    int tables() {
        return tables;
    }

    int crc() {
        return (int) crc.getValue();
    }

    /** Null when {@code other} agrees with this digest, else what differs. */
    String mismatch(long otherEntries, long otherBytes, int otherTables, int otherCrc) {
        if (entries == otherEntries && bytes == otherBytes && tables == otherTables && crc() == otherCrc) return null;
        return String.format("%d tables, %d entries, %d bytes, digest %08x against %d tables, %d entries, %d bytes, digest %08x",
                tables, entries, bytes, crc(), otherTables, otherEntries, otherBytes, otherCrc);
    }
}
