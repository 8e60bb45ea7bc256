package dev.varve.engine;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Payloads of the engine's logical WAL records (types in {@code RecordTypes}).
 *
 * <pre>
 * DATA_BATCH:        count (4) | count x op | [snapshotRank (4)]
 *   op:              kind (1: put, 2: remove) | fileId (4) | keyLength (4) | key | [valueLength (4) | value]
 *   snapshotRank:    only in the batch of a writeAndSnapshot: the rank of the snapshot declared right after it, whose
 *                    SNAPSHOT record comes next among the logical records (recovery declares it when a crash cut that
 *                    record off: the pair is one commit)
 * CREATE_TABLE:      tableId (4) | partitions (4) | nameLength (4) | name (UTF-8) | callerPlaced (1)
 *                    (a CREATE_TABLE from before caller placement ends after the name: hash-placed)
 * DESTROY_PARTITION: fileId (4)
 * SNAPSHOT:          id (8) | rank (4) | declaredMillis (8)
 * RANK:              id (8) | rank (4)
 * </pre>
 */
final class LogicalRecords {
    static final byte PUT = 1;
    static final byte REMOVE = 2;

    /** One operation of a batch; value is null for a remove. */
    record Op(int fileId, byte[] key, byte[] value) {
        int encodedBytes() {
            return 1 + 4 + 4 + key.length + (value == null ? 0 : 4 + value.length);
        }
    }

    private LogicalRecords() {
    }

    private static final ThreadLocal<ByteBuffer> SCRATCH = ThreadLocal.withInitial(() -> ByteBuffer.allocateDirect(64 * 1024).order(ByteOrder.LITTLE_ENDIAN));
    /**
     * The largest buffer a thread keeps between records. The buffer stays with the thread for its life, whatever
     * store it wrote to and whether that store is still open: grown to the largest batch ever encoded (up to a WAL
     * segment), it held megabytes of direct memory in every pool thread that once wrote a large batch.
     */
    private static final int KEPT_BYTES = 1 << 20;

    /**
     * A cleared per-thread buffer of at least {@code bytes}; valid until the thread's next call. A record larger than
     * {@link #KEPT_BYTES} gets a buffer of its own, which the garbage collector frees once the record is logged.
     */
    static ByteBuffer scratch(int bytes) {
        ByteBuffer b = SCRATCH.get();
        if (b.capacity() < bytes) {
            if (bytes > KEPT_BYTES) return ByteBuffer.allocateDirect(bytes).order(ByteOrder.LITTLE_ENDIAN);
            b = ByteBuffer.allocateDirect(Math.min(KEPT_BYTES, Math.max(bytes, b.capacity() * 2))).order(ByteOrder.LITTLE_ENDIAN);
            SCRATCH.set(b);
        }
        b.clear();
        return b;
    }

    /** Where a batch payload's first operation starts (after its count). */
    static final int FIRST_OP = 4;

    /** Where the value of a put whose operation starts at {@code opOffset} of a batch payload starts. */
    static int valueOffset(int opOffset, byte[] key) {
        return opOffset + 1 + 4 + 4 + key.length + 4;
    }

    /** A long: a batch's operations can add up past an int, which must not wrap under the WAL's record limit. */
    static long batchBytes(List<Op> ops) {
        long n = FIRST_OP;
        for (Op op : ops) n += op.encodedBytes();
        return n;
    }

    /** Bytes a batch's snapshot rank adds to its record. */
    static final int SNAPSHOT_RANK_BYTES = 4;

    static ByteBuffer encodeBatch(List<Op> ops) {
        return encodeBatch(ops, 0);
    }

    /** A batch whose snapshot of rank {@code snapshotRank} is declared right after it; 0: a plain batch. */
    static ByteBuffer encodeBatch(List<Op> ops, int snapshotRank) {
        ByteBuffer b = scratch(Math.toIntExact(batchBytes(ops) + (snapshotRank > 0 ? SNAPSHOT_RANK_BYTES : 0)));
        b.putInt(ops.size());
        for (Op op : ops) putOp(b, op.fileId(), op.key(), op.value());
        if (snapshotRank > 0) b.putInt(snapshotRank);
        return b.flip();
    }

    /** A batch of one operation, without allocating a list. */
    static ByteBuffer encodeSingle(int fileId, byte[] key, byte[] value) {
        ByteBuffer b = scratch(4 + 1 + 8 + key.length + (value == null ? 0 : 4 + value.length));
        b.putInt(1);
        putOp(b, fileId, key, value);
        return b.flip();
    }

    private static void putOp(ByteBuffer b, int fileId, byte[] key, byte[] value) {
        b.put(value == null ? REMOVE : PUT).putInt(fileId).putInt(key.length).put(key);
        if (value != null) b.putInt(value.length).put(value);
    }

    /**
     * The number of operations a batch record holds, without decoding them or making a view of the payload: open's scan
     * and replay ask it of every record several times (head-room, the replay bound, the workers' hand-over).
     */
    static int operationCount(ByteBuffer payload) {
        int raw = payload.getInt(payload.position());
        return payload.order() == ByteOrder.LITTLE_ENDIAN ? raw : Integer.reverseBytes(raw);
    }

    /** Where one operation of a batch lies in its payload; a consumer copies out what it keeps. */
    @FunctionalInterface
    interface OpSink {
        /**
         * @param b           the batch's payload, little-endian; the offsets are absolute indexes into it
         * @param valueLength -1 for a remove (whose value offset means nothing)
         */
        void op(int fileId, ByteBuffer b, int keyOffset, int keyLength, int valueOffset, int valueLength);
    }

    /**
     * Hands each operation of a batch payload to {@code sink} in order, where it lies, without copying keys or values
     * (recovery copies them once, into the replay worker's buffer); returns the rank of the snapshot declared right
     * after the batch, 0 when none is (see the class).
     */
    static int forEachOp(ByteBuffer payload, OpSink sink) {
        // absolute reads only, from the payload's position: a little-endian payload (the WAL's views) needs no view of its own
        ByteBuffer b = payload.order() == ByteOrder.LITTLE_ENDIAN ? payload : payload.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int p = b.position();
        int n = b.getInt(p);
        p += 4;
        for (int i = 0; i < n; i++) {
            byte kind = b.get(p);
            int fileId = b.getInt(p + 1);
            int keyLength = b.getInt(p + 5);
            int keyOffset = p + 9;
            p = keyOffset + keyLength;
            if (kind == PUT) {
                int valueLength = b.getInt(p);
                sink.op(fileId, b, keyOffset, keyLength, p + 4, valueLength);
                p += 4 + valueLength;
            } else if (kind == REMOVE) {
                sink.op(fileId, b, keyOffset, keyLength, p, -1);
            } else {
                throw new IllegalStateException("unknown batch operation kind " + kind + " (operation " + i + " of " + n + ")");
            }
        }
        return b.limit() - p >= SNAPSHOT_RANK_BYTES ? b.getInt(p) : 0;
    }

    static List<Op> decodeBatch(ByteBuffer payload) {
        List<Op> ops = new ArrayList<>(operationCount(payload));
        forEachOp(payload, (fileId, b, keyOffset, keyLength, valueOffset, valueLength) ->
                ops.add(new Op(fileId, copy(b, keyOffset, keyLength), valueLength < 0 ? null : copy(b, valueOffset, valueLength))));
        return ops;
    }

    /** {@code length} bytes of {@code b} from index {@code offset}, in an array of their own. */
    static byte[] copy(ByteBuffer b, int offset, int length) {
        byte[] bytes = new byte[length];
        b.get(offset, bytes);
        return bytes;
    }

    static ByteBuffer encodeCreateTable(int tableId, TableOptions options, String name) {
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = scratch(13 + n.length);
        return b.putInt(tableId).putInt(options.partitions()).putInt(n.length).put(n).put((byte) (options.callerPlaced() ? 1 : 0)).flip();
    }

    /** A decoded CREATE_TABLE. */
    record CreateTable(int tableId, TableOptions options, String name) {
    }

    static CreateTable decodeCreateTable(ByteBuffer payload) {
        ByteBuffer b = payload.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int id = b.getInt();
        int parts = b.getInt();
        byte[] n = new byte[b.getInt()];
        b.get(n);
        boolean callerPlaced = b.hasRemaining() && b.get() == 1;
        return new CreateTable(id, callerPlaced ? TableOptions.callerPlaced(parts) : TableOptions.hashPlaced(parts), new String(n, StandardCharsets.UTF_8));
    }

    static ByteBuffer encodeDestroy(int fileId) {
        return scratch(4).putInt(fileId).flip();
    }

    /** A decoded snaprec. */
    record Snapshot(long id, int rank, long declaredMillis) {
    }

    static ByteBuffer encodeSnapshot(long id, int rank, long declaredMillis) {
        return scratch(20).putLong(id).putInt(rank).putLong(declaredMillis).flip();
    }

    static ByteBuffer encodeRank(long id, int rank) {
        return scratch(12).putLong(id).putInt(rank).flip();
    }

    static Snapshot decodeRank(ByteBuffer payload) {
        ByteBuffer b = payload.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        return new Snapshot(b.getLong(), b.getInt(), 0);
    }

    static Snapshot decodeSnapshot(ByteBuffer payload) {
        ByteBuffer b = payload.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        return new Snapshot(b.getLong(), b.getInt(), b.getLong());
    }

    static int decodeDestroy(ByteBuffer payload) {
        return payload.duplicate().order(ByteOrder.LITTLE_ENDIAN).getInt();
    }
}
