package dev.varve.engine;

import dev.varve.core.tree.BPlusTree;

/**
 * What a key, a value and a batch may be: refused with a message naming the size and the limit before anything is
 * logged, so a rejected write changes nothing. On a closed store a bad input is told the store is closed instead
 * (checked on the error path only, so a good input pays for no volatile read here).
 */
final class InputLimits {
    private final Engine engine;

    InputLimits(Engine engine) {
        this.engine = engine;
    }

    /** Rejects a batch, before anything is logged, that the WAL or the data region cannot take in one piece. */
    void checkBatch(long bytes, long keyAndValueBytes, int operations) {
        if (bytes > engine.wal.maxPayloadBytes()) throw new IllegalArgumentException("batch of " + bytes + " bytes exceeds the WAL record limit of "
                + engine.wal.maxPayloadBytes() + " bytes; split it or raise walSegmentSize");
        if (!fitsDataRegion(keyAndValueBytes, operations)) throw new IllegalArgumentException("batch of " + operations + " operations may touch ~"
                + engine.memory.headroomFor(keyAndValueBytes, operations) + " pages, more than half the data region ("
                + engine.memory.capacityPages() + " pages); split it or raise dataRegionSize");
    }

    /** Whether the pages a batch may touch are within what one change may take of the data region. */
    boolean fitsDataRegion(long keyAndValueBytes, int operations) {
        return engine.memory.headroomFor(keyAndValueBytes, operations) <= engine.memory.maxHeadroom();
    }

    /** Refuses a bad key. */
    void checkKey(byte[] key) {
        if (key != null && key.length <= engine.maxKeyBytes) return;
        engine.checkOpen();
        if (key == null) throw new IllegalArgumentException("key is null");
        throw new IllegalArgumentException("key of " + key.length + " bytes exceeds the maximum of " + engine.maxKeyBytes + " bytes (pageSize / 4)");
    }

    /** Refuses a bad value. */
    void checkValue(byte[] value) {
        if (value != null && value.length <= BPlusTree.MAX_VALUE_BYTES) return;
        engine.checkOpen();
        if (value == null) throw new IllegalArgumentException("value is null (use remove to delete a key)");
        throw new IllegalArgumentException("value of " + value.length + " bytes exceeds the maximum of " + BPlusTree.MAX_VALUE_BYTES + " bytes");
    }
}
