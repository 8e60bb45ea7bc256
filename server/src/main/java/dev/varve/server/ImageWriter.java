package dev.varve.server;

import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.ConfigLimits;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.engine.Cursor;
import dev.varve.engine.Table;
import dev.varve.engine.TableOptions;
import dev.varve.engine.Varve;
import io.netty.buffer.ByteBuf;

import java.util.ArrayList;
import java.util.List;

/**
 * Builds the received image into a fresh store through the public API, one frame at a time, and verifies it: the
 * digest of what arrived against the sender's END frame, then the digest of what the closed and reopened store reads
 * back. Not thread-safe: one applier thread drives it.
 *
 * <p>The store is written with {@code walSyncMode=BACKGROUND} and uncompressed recovery files: until the transfer is
 * committed the directory is marked unfinished, so nothing written before the final close (a checkpoint and fsync)
 * needs to survive a crash, and compressing what no recovery will read would only cost CPU.
 */
final class ImageWriter implements AutoCloseable {
    /** Puts go to the store in atomic batches of about this many key and value bytes. */
    private static final int BATCH_BYTES = 512 << 10;

    private final IncomingStore incoming;
    private final RecoveryMode recoveryModeOverride;
    private final ImageDigest received = new ImageDigest();
    private Varve store;
    private String table;
    private int partition;
    private long snapshotId;
    private long verifyNanos;

    ImageWriter(IncomingStore incoming, RecoveryMode recoveryModeOverride) {
        this.incoming = incoming;
        this.recoveryModeOverride = recoveryModeOverride;
    }

    long snapshotId() {
        return snapshotId;
    }

    ImageDigest received() {
        return received;
    }

    /** Time {@link #end} spent reading the store back. */
    long verifyNanos() {
        return verifyNanos;
    }

    void header(ByteBuf p) {
        if (store != null) throw new BackupException("the sender sent a second HEADER frame");
        snapshotId = p.readLong();
        p.readInt(); // rank: the backup is an ordinary store, it holds no snapshots
        p.readLong(); // declared millis
        int pageSize = p.readInt();
        int partitions = p.readInt();
        RecoveryMode mode = recoveryModeOverride != null ? recoveryModeOverride : RecoveryMode.valueOf(Frame.readString(p));
        store = Varve.open(VarveConfig.builder().path(incoming.storeDir()).pageSize(pageSize).partitions(partitions)
                .recoveryMode(mode).recoveryCompression(RecoveryCompression.DISABLED).walSyncMode(WalSyncMode.BACKGROUND).build());
    }

    void table(ByteBuf p) {
        checkStarted();
        table = Frame.readString(p);
        TableOptions options = ShipProtocol.readOptions(p);
        store.table(table, options); // created even when empty, placed as on the sender
        received.table(table, options);
        partition = -1;
    }

    /** Applies one ENTRIES frame; returns the number of entries. */
    int entries(ByteBuf p) {
        checkStarted();
        if (table == null) throw new BackupException("the sender sent entries before a TABLE frame");
        int part = p.readInt();
        if (part < partition || part >= store.table(table).partitions())
            throw new BackupException("the sender sent entries of partition " + part + " of table " + table + " out of order or range");
        if (part != partition) received.partition(part);
        partition = part;
        int count = p.readInt();
        List<byte[]> batch = new ArrayList<>();
        int batchBytes = 0;
        for (int i = 0; i < count; i++) {
            byte[] key = new byte[p.readUnsignedShort()];
            p.readBytes(key);
            byte[] value = new byte[p.readInt()];
            p.readBytes(value);
            received.entry(key, value);
            if (batchBytes + key.length + value.length > BATCH_BYTES && !batch.isEmpty()) {
                putAll(batch);
                batchBytes = 0;
            }
            batch.add(key);
            batch.add(value);
            batchBytes += key.length + value.length;
        }
        if (!batch.isEmpty()) putAll(batch);
        if (p.isReadable()) throw new BackupException("an ENTRIES frame holds " + p.readableBytes() + " bytes past its " + count + " entries");
        return count;
    }

    private void putAll(List<byte[]> keysAndValues) {
        String t = table;
        int part = partition;
        store.write(b -> {
            for (int i = 0; i < keysAndValues.size(); i += 2) b.put(t, part, keysAndValues.get(i), keysAndValues.get(i + 1));
        });
        keysAndValues.clear();
    }

    /**
     * Checks the END frame against what arrived, closes the store, reads it back and checks again, commits; returns
     * the configuration to keep writing the committed store with (follow mode): durable writes, default compression.
     */
    VarveConfig end(ByteBuf p) {
        checkStarted();
        long entries = p.readLong();
        long bytes = p.readLong();
        int tables = p.readInt();
        int crc = p.readInt();
        String arrived = received.mismatch(entries, bytes, tables, crc);
        if (arrived != null) throw new BackupException("the received image does not match what the sender read: " + arrived);
        VarveConfig config = store.config();
        store.close();
        store = null;
        long verifyStart = System.nanoTime();
        try (Varve reopened = Varve.open(config)) {
            String stored = readBack(reopened).mismatch(entries, bytes, tables, crc);
            if (stored != null) throw new BackupException("the store built from the image does not read back as sent: " + stored);
        }
        verifyNanos = System.nanoTime() - verifyStart;
        incoming.commit();
        return config.toBuilder().path(incoming.target()).walSyncMode(WalSyncMode.LOG_ONLY)
                .recoveryCompression(ConfigLimits.RECOVERY_COMPRESSION_DEFAULT).build();
    }

    private static ImageDigest readBack(Varve s) {
        ImageDigest d = new ImageDigest();
        for (String name : s.tables()) {
            Table t = s.table(name);
            d.table(name, t.options());
            for (int p = 0; p < t.partitions(); p++) {
                try (Cursor c = t.partition(p).scan(null, null)) {
                    if (!c.next()) continue; // the sender sends no frame for an empty partition
                    d.partition(p);
                    do d.entry(c.key(), c.value()); while (c.next());
                }
            }
        }
        return d;
    }

    private void checkStarted() {
        if (store == null) throw new BackupException("the sender sent data before its HEADER frame");
    }

    /** Closes the store of an unfinished transfer (the directory stays marked unfinished). */
    @Override
    public void close() {
        if (store != null) {
            store.close();
            store = null;
        }
    }
}
