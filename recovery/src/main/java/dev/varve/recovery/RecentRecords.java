package dev.varve.recovery;

import dev.varve.checkpoint.LoggedRecords;
import dev.varve.core.wal.Wal;
import dev.varve.core.wal.WalReader;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The logical records that physical replay's LOGGED ops copy from: a page change names bytes of the batch record it
 * applies, which its writer appended just before (other writers' records may come between). Replay offers each batch
 * record as it passes; the most recent {@value #KEPT} are kept as copies (a reader's payload is valid only until its
 * next step), and any older one is read from the WAL again.
 */
final class RecentRecords implements LoggedRecords {
    private static final int KEPT = 64;
    private final Wal wal;
    private final long[] lsns = new long[KEPT];
    private final ByteBuffer[] payloads = new ByteBuffer[KEPT];
    private int newest = KEPT - 1;

    RecentRecords(Wal wal) {
        this.wal = wal;
        Arrays.fill(lsns, -1);
    }

    /** Keeps a copy of the reader's current record. */
    void offer(WalReader r) {
        newest = (newest + 1) % KEPT;
        payloads[newest] = copy(r.payload(), payloads[newest]);
        lsns[newest] = r.lsn();
    }

    @Override
    public ByteBuffer payload(long lsn) {
        for (int k = 0, i = newest; k < KEPT; k++, i = (i + KEPT - 1) % KEPT) if (lsns[i] == lsn) return payloads[i];
        try (WalReader r = wal.read(lsn)) {
            if (r.next() && r.lsn() == lsn) return copy(r.payload(), null);
        } catch (IllegalArgumentException notABoundary) {
            // reported below, as for any record the WAL does not hold
        }
        throw new IllegalStateException("a page rebuild copies from WAL record " + lsn + ", which the WAL does not hold");
    }

    /** {@code src}'s bytes from index 0 in {@code reuse} when it is big enough, else in a new buffer. */
    private static ByteBuffer copy(ByteBuffer src, ByteBuffer reuse) {
        int n = src.remaining();
        ByteBuffer b = reuse != null && reuse.capacity() >= n ? reuse : ByteBuffer.allocate(Math.max(n, 256)).order(ByteOrder.LITTLE_ENDIAN);
        b.clear().put(0, src, src.position(), n).limit(n);
        return b;
    }
}
