package dev.varve.snapshot;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * A {@link MaplogFile}'s entries appended but not written yet, and the gate they wait at before they reach the file.
 * Appends stay in memory until the buffer fills, so a write (or the fsync that creates a new part) is paid once per
 * buffer, not per entry; a full buffer the gate keeps closed grows instead. Guarded by the log's monitor.
 */
final class MaplogBuffer {
    private static final int ENTRY = MaplogDescriptor.ENTRY_SIZE;

    /**
     * What buffered entries wait for before they reach the file: the drop log's, for the WAL records that caused them
     * ({@link DropLog}). A full buffer whose entries may not be written yet grows instead, so that an append, made
     * under the archive's state lock, never waits for that.
     */
    interface WriteGate {
        WriteGate OPEN = new WriteGate() {
            @Override
            public boolean open() {
                return true;
            }

            @Override
            public void await() {
            }
        };

        /** Whether the entries buffered so far may be written now, without waiting. */
        boolean open();

        /** Returns once they may: called before they are written (a force, a truncate, a close). */
        void await();
    }

    /** The capacity a buffer the gate made grow goes back to once written. */
    private final int initialBytes;
    private ByteBuffer entries;
    /** Whether buffered entries may reach the file now; {@link WriteGate#OPEN} but for the drop log. */
    private WriteGate gate = WriteGate.OPEN;

    MaplogBuffer(int capacityEntries) {
        this.initialBytes = ENTRY * capacityEntries;
        this.entries = ByteBuffer.allocate(initialBytes).order(ByteOrder.LITTLE_ENDIAN);
    }

    void gate(WriteGate g) {
        gate = g;
    }

    /**
     * Before an append: true when the buffer is full and may be written now, which the log then does; a full buffer
     * the gate keeps closed doubles instead.
     */
    boolean mustWrite() {
        if (entries.hasRemaining()) return false;
        if (gate.open()) return true;
        entries = ByteBuffer.allocate(2 * entries.capacity()).order(ByteOrder.LITTLE_ENDIAN).put(entries.flip());
        return false;
    }

    /** Buffers an entry; there is room ({@link #mustWrite}). */
    void put(long a, long b, long c, CRC32C crc) {
        int at = entries.position();
        MaplogDescriptor.encode(entries, at, a, b, c, crc);
        entries.position(at + ENTRY);
    }

    /** Whether {@code n} more entries fit without a write. */
    boolean fits(int n) {
        return entries.remaining() >= (long) n * ENTRY;
    }

    boolean isEmpty() {
        return entries.position() == 0;
    }

    /** Once the gate lets them through, the buffered entries to write, flipped for reading; {@link #written} follows. */
    ByteBuffer toWrite() {
        gate.await();
        return entries.flip();
    }

    /**
     * The buffered entries were written (or failed to be): the buffer starts over empty, at its initial capacity if the
     * gate made it grow. Kept grown, a burst of drops between two checkpoints (1M of them: 32 MiB) would stay in the
     * heap for the store's life, where they are meant to wait only until the next checkpoint.
     */
    void written() {
        if (entries.capacity() > initialBytes) entries = ByteBuffer.allocate(initialBytes).order(ByteOrder.LITTLE_ENDIAN);
        else entries.clear();
    }

    /** Bytes the buffer holds room for (tests: it gives back what a closed gate made it grow by). */
    int capacity() {
        return entries.capacity();
    }

    /** The buffer itself, entry i at byte i * ENTRY: for reads of entries not written yet. */
    ByteBuffer entries() {
        return entries;
    }
}
