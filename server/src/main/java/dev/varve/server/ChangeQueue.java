package dev.varve.server;

import dev.varve.engine.ChangeListener;
import dev.varve.engine.TableOptions;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The follow stream's hand-off from the store's writers to the shipping thread: each change is encoded into a frame
 * body (type byte and payload, see {@link ShipProtocol}) on the writer's thread and queued. The queue is bounded in
 * bytes: a standby that falls further behind than that is cut off ({@link #overflow}) rather than growing the
 * sender's heap or slowing its writers; its standby stays consistent up to what it applied, and a new follow reseeds it.
 * So is one whose next write is too large for a frame.
 */
final class ChangeQueue implements ChangeListener {
    private final long maxBytes;
    /** The largest frame a receiver takes ({@link ShipProtocol#MAX_FRAME_BYTES}; smaller in tests). */
    private final int maxFrameBytes;
    private final ArrayDeque<byte[]> bodies = new ArrayDeque<>();
    private long bytes;
    private String overflow; // why the stream must end, once it must

    ChangeQueue(long maxBytes) {
        this(maxBytes, ShipProtocol.MAX_FRAME_BYTES);
    }

    ChangeQueue(long maxBytes, int maxFrameBytes) {
        this.maxBytes = maxBytes;
        this.maxFrameBytes = maxFrameBytes;
    }

    @Override
    public void onWrite(long lsn, List<Change> changes) {
        int size = 1 + 8 + 4;
        for (Change c : changes) size += 2 + utf8(c.table()).length + 4 + 2 + c.key().length + 4 + (c.value() == null ? 0 : c.value().length);
        ByteBuffer b = ByteBuffer.allocate(size).put(ShipProtocol.CHANGES).putLong(lsn).putInt(changes.size());
        for (Change c : changes) {
            putString(b, c.table());
            b.putInt(c.partition());
            b.putShort((short) c.key().length).put(c.key());
            if (c.value() == null) b.putInt(-1);
            else b.putInt(c.value().length).put(c.value());
        }
        add(b.array());
    }

    @Override
    public void onTableCreated(long lsn, String table, TableOptions options) {
        ByteBuffer b = ByteBuffer.allocate(1 + 8 + 2 + utf8(table).length + 1 + 4).put(ShipProtocol.TABLE_CREATED).putLong(lsn);
        putString(b, table);
        add(b.put((byte) (options.callerPlaced() ? 1 : 0)).putInt(options.partitions()).array());
    }

    @Override
    public void onPartitionDestroyed(long lsn, String table, int partition) {
        ByteBuffer b = ByteBuffer.allocate(1 + 8 + 2 + utf8(table).length + 4).put(ShipProtocol.PARTITION_DESTROYED).putLong(lsn);
        putString(b, table);
        add(b.putInt(partition).array());
    }

    @Override
    public void onSnapshot(long lsn, long id, int rank) {
        add(ByteBuffer.allocate(1 + 8 + 8 + 4).put(ShipProtocol.SNAPSHOT).putLong(lsn).putLong(id).putInt(rank).array());
    }

    @Override
    public void onRank(long lsn, long id, int rank) {
        add(ByteBuffer.allocate(1 + 8 + 8 + 4).put(ShipProtocol.RANK).putLong(lsn).putLong(id).putInt(rank).array());
    }

    private synchronized void add(byte[] body) {
        if (overflow != null) return;
        // the frame a body goes out in is longer by its sequence number and CRC: measured against the receiver's limit
        // as that frame, a write just under the limit would end the follow at the receiver as a foreign protocol
        long frameBytes = (long) body.length + ShipProtocol.SEQUENCE_BYTES + ShipProtocol.FRAME_OVERHEAD - 1;
        if (frameBytes > maxFrameBytes) {
            overflow = "a write of " + body.length + " bytes is larger than one follow frame (" + frameBytes + " bytes framed, at most "
                    + maxFrameBytes + ")";
        } else if (bytes + body.length > maxBytes) {
            overflow = "the standby fell more than " + (maxBytes >> 20) + " MiB behind the sender";
        }
        if (overflow != null) { // everything queued is useless now: the standby must be reseeded
            bodies.clear();
            bytes = 0;
        } else {
            bodies.addLast(body);
            bytes += body.length;
        }
        notifyAll();
    }

    /** The queued frame bodies (at most about {@code maxTake} bytes), waiting up to {@code timeoutMillis} for one. */
    synchronized List<byte[]> take(long timeoutMillis, int maxTake) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        while (bodies.isEmpty() && overflow == null) {
            long left = deadline - System.nanoTime();
            if (left <= 0) break;
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        List<byte[]> out = new ArrayList<>();
        int taken = 0;
        while (!bodies.isEmpty() && (out.isEmpty() || taken + bodies.peekFirst().length <= maxTake)) {
            byte[] b = bodies.pollFirst();
            bytes -= b.length;
            taken += b.length;
            out.add(b);
        }
        return out;
    }

    /** Why the stream must end (the standby can no longer be kept whole), or null while it goes on. */
    synchronized String overflow() {
        return overflow;
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static void putString(ByteBuffer b, String s) {
        byte[] u = utf8(s);
        b.putShort((short) u.length).put(u);
    }
}
