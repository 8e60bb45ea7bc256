package dev.varve.infinispan;

import org.infinispan.commons.io.ByteBuffer;
import org.infinispan.commons.io.ByteBufferImpl;
import org.infinispan.persistence.spi.MarshallableEntry;
import org.infinispan.persistence.spi.MarshallableEntryFactory;

import java.nio.ByteOrder;

/**
 * The stored form of a cache entry: Infinispan's already-marshalled pieces, kept byte for byte, behind a small
 * header. The key of the {@code entries} table is the entry's marshalled key; the key of the {@code expiry} table
 * is the expiry time followed by the marshalled key, so a scan up to "now" finds exactly the expired entries.
 *
 * <pre>
 * entry value:  format (1) | expiryTime (8) | created (8) | lastUsed (8)
 *               | valueLength (4) | value | metadataLength (4) | metadata | internalLength (4) | internal metadata
 *               (a length of -1 stands for an absent piece; expiryTime -1 for an immortal entry)
 * expiry key:   expiryTime (8, big-endian, so byte order is time order) | marshalled key
 * expiry value: empty
 * </pre>
 */
final class EntryCodec {
    static final byte FORMAT = 1;
    static final byte[] EMPTY = new byte[0];
    private static final int HEADER_BYTES = 1 + 8 + 8 + 8;

    private EntryCodec() {
    }

    static byte[] bytes(ByteBuffer b) {
        if (b == null) return null;
        if (b.getOffset() == 0 && b.getLength() == b.getBuf().length) return b.getBuf();
        byte[] out = new byte[b.getLength()];
        System.arraycopy(b.getBuf(), b.getOffset(), out, 0, out.length);
        return out;
    }

    static byte[] encode(MarshallableEntry<?, ?> e) {
        byte[] value = bytes(e.getValueBytes());
        byte[] meta = bytes(e.getMetadataBytes());
        byte[] internal = bytes(e.getInternalMetadataBytes());
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(HEADER_BYTES + 12 + length(value) + length(meta) + length(internal))
                .order(ByteOrder.LITTLE_ENDIAN);
        b.put(FORMAT).putLong(e.expiryTime()).putLong(e.created()).putLong(e.lastUsed());
        put(b, value);
        put(b, meta);
        put(b, internal);
        return b.array();
    }

    private static int length(byte[] a) {
        return a == null ? 0 : a.length;
    }

    private static void put(java.nio.ByteBuffer b, byte[] a) {
        if (a == null) {
            b.putInt(-1);
        } else {
            b.putInt(a.length).put(a);
        }
    }

    /** The expiry time of a stored entry, -1 when immortal. */
    static long expiryTime(byte[] stored) {
        return header(stored).getLong(1);
    }

    private static java.nio.ByteBuffer header(byte[] stored) {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(stored).order(ByteOrder.LITTLE_ENDIAN);
        if (stored.length < HEADER_BYTES || b.get(0) != FORMAT)
            throw new IllegalStateException("stored entry of " + stored.length + " bytes has unknown format " + (stored.length == 0 ? "(empty)" : stored[0]));
        return b;
    }

    /** True when the stored entry has expired at {@code now} (wall-clock millis). */
    static boolean isExpired(byte[] stored, long now) {
        long expiry = expiryTime(stored);
        return expiry > -1 && expiry <= now;
    }

    /** The entry, with the key given as an object (a load by key) or as its marshalled bytes (a scan). */
    static <K, V> MarshallableEntry<K, V> decode(MarshallableEntryFactory<K, V> factory, Object key, byte[] keyBytes, byte[] stored, boolean includeValue) {
        java.nio.ByteBuffer b = header(stored);
        b.position(9);
        long created = b.getLong();
        long lastUsed = b.getLong();
        ByteBuffer value = piece(b);
        ByteBuffer meta = piece(b);
        ByteBuffer internal = piece(b);
        if (!includeValue) value = null;
        return key != null ? factory.create(key, value, meta, internal, created, lastUsed)
                : factory.create(ByteBufferImpl.create(keyBytes), value, meta, internal, created, lastUsed);
    }

    private static ByteBuffer piece(java.nio.ByteBuffer b) {
        int n = b.getInt();
        if (n < 0) return null;
        ByteBuffer out = ByteBufferImpl.create(b.array(), b.position(), n);
        b.position(b.position() + n);
        return out;
    }

    static byte[] expiryKey(long expiryTime, byte[] key) {
        return java.nio.ByteBuffer.allocate(8 + key.length).order(ByteOrder.BIG_ENDIAN).putLong(expiryTime).put(key).array();
    }

    /** The first expiry key after every entry expiring at or before {@code now}. */
    static byte[] expiryBound(long now) {
        return java.nio.ByteBuffer.allocate(8).order(ByteOrder.BIG_ENDIAN).putLong(now + 1).array();
    }

    static long expiryOf(byte[] expiryKey) {
        return java.nio.ByteBuffer.wrap(expiryKey).order(ByteOrder.BIG_ENDIAN).getLong();
    }

    static byte[] keyOf(byte[] expiryKey) {
        byte[] k = new byte[expiryKey.length - 8];
        System.arraycopy(expiryKey, 8, k, 0, k.length);
        return k;
    }
}
