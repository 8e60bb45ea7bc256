package dev.varve.server;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIOFactory;
import dev.varve.engine.ChangeListener.Change;
import dev.varve.engine.SnapshotInfo;
import dev.varve.engine.SnapshotNotFoundException;
import dev.varve.engine.TableOptions;
import dev.varve.engine.Varve;
import io.netty.buffer.ByteBuf;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Applies a follow stream to the standby (the committed image, reopened). Crash safety: each sender write is applied
 * as one atomic write of the standby, in the sender's commit order, with the standby's {@code walSyncMode}
 * ({@code LOG_ONLY} survives a killed receiver, {@code FSYNC} a power loss too), so whatever the standby recovers to is
 * the sender's state after some prefix of its writes; each sender snapshot becomes a standby snapshot at the same
 * cut, made durable and then recorded in the {@link Standby} map, of the sender's rank (at most the standby's levels)
 * and raised as the sender raises it, kept as the standby's retention policy says (by default all of them). The map keeps the lines
 * of the snapshots the standby keeps: once it holds {@value #REWRITE_MIN_LINES} lines (by default) and twice what it held after its
 * last rewrite, it is rewritten whole without those of dropped ones. One applier thread drives it.
 */
final class StandbyWriter implements AutoCloseable {
    /** Bytes a change takes in a CHANGES frame at the least: table name length, partition, key length, value length. */
    private static final int MIN_CHANGE_BYTES = 2 + 4 + 2 + 4;
    /** Map lines held before a rewrite is tried, by default; after one, it waits until the map doubles. */
    static final int REWRITE_MIN_LINES = 4096;
    private final int rewriteMinLines;
    private final Varve store;
    private final Path mapPath;
    private FileChannel map;
    private long changesApplied;
    private long rewriteAt;
    /** The map's lines, one per entry: sender snapshot id to the standby's. */
    private final Map<Long, Long> localOf = new TreeMap<>(); // a standby is followed once: its map starts empty
    private final int levels;
    /**
     * What the stream carried so far, to refuse a frame that cannot follow it (see {@link #checkRecord}): the latest
     * sender snapshot id, the LSN of the latest declaration (SNAPSHOT or RANK), the highest LSN, and per table and
     * partition the LSN of the last record that wrote it since that declaration.
     */
    private long latestSenderSnapshot;
    private long declarationLsn = Long.MIN_VALUE;
    private long highestLsn = Long.MIN_VALUE;
    private final Map<TablePartition, Long> partitionLsn = new HashMap<>();

    private record TablePartition(String table, int partition) {
    }

    StandbyWriter(VarveConfig config, long imageSnapshot, int imageRank, int rewriteMinLines) {
        this.rewriteMinLines = rewriteMinLines;
        this.rewriteAt = rewriteMinLines;
        this.latestSenderSnapshot = imageSnapshot;
        this.store = Varve.open(config);
        this.mapPath = config.path().resolve(Standby.SNAPSHOT_MAP);
        this.levels = config.retention().levelCount();
        try {
            this.map = openMap();
            declare(imageSnapshot, imageRank);
        } catch (RuntimeException e) {
            close(); // the standby is not left open when following cannot start
            throw e;
        }
    }

    /** The map, created with its header (durably, name included) if it does not exist yet, open for appends. */
    private FileChannel openMap() {
        try {
            if (!Files.exists(mapPath)) DurableFiles.create(FileIOFactory.standard(), mapPath, ByteBuffer.wrap(StandbyMapDescriptor.header())).close();
            return FileChannel.open(mapPath, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the standby's snapshot map " + mapPath, e);
        }
    }

    long changesApplied() {
        return changesApplied;
    }

    void apply(byte type, ByteBuf p) {
        switch (type) {
            case ShipProtocol.CHANGES:
                applyWrite(p);
                break;
            case ShipProtocol.TABLE_CREATED: {
                long lsn = p.readLong();
                String name = Frame.readString(p);
                TableOptions options = ShipProtocol.readOptions(p);
                checkRecord("TABLE_CREATED", lsn, List.of());
                store.table(name, options);
                recorded(lsn, List.of());
                break;
            }
            case ShipProtocol.PARTITION_DESTROYED: {
                long lsn = p.readLong();
                String table = Frame.readString(p);
                int partition = p.readInt();
                List<TablePartition> destroyed = List.of(new TablePartition(table, partition));
                checkRecord("PARTITION_DESTROYED", lsn, destroyed);
                // a sender announces every table before its first record (the image, or TABLE_CREATED); store.table(name)
                // would create a hash-placed table on first use, so a destroy of one the standby lacks made it one
                if (!store.tables().contains(table))
                    throw new BackupException("the sender destroyed partition " + partition + " of table " + table + ", which neither its image nor"
                            + " its stream created: a stream that does not follow the standby's image, which the standby does not apply");
                store.table(table).partition(partition).destroy();
                recorded(lsn, destroyed);
                break;
            }
            case ShipProtocol.SNAPSHOT: {
                long lsn = p.readLong();
                long id = p.readLong();
                int rank = p.readInt();
                checkDeclaration("SNAPSHOT", lsn);
                if (id <= latestSenderSnapshot)
                    throw new BackupException("the sender declared snapshot " + id + " after snapshot " + latestSenderSnapshot + ", where its ids only"
                            + " grow: a replayed or spliced frame, which the standby does not declare (it holds everything up to sender snapshot "
                            + latestSenderSnapshot + " and the writes after it)");
                declare(id, rank);
                latestSenderSnapshot = id;
                declared(lsn);
                break;
            }
            case ShipProtocol.RANK: {
                long lsn = p.readLong();
                long id = p.readLong();
                int rank = p.readInt();
                checkDeclaration("RANK", lsn);
                raise(id, rank);
                declared(lsn);
                break;
            }
            case ShipProtocol.HEARTBEAT:
                break;
            default:
                throw new BackupException("the sender sent an unexpected " + ShipProtocol.typeName(type) + " frame while following");
        }
    }

    /**
     * One sender write (a CHANGES frame) as one atomic write, each change into the partition it went to there. The
     * frame is parsed whole before anything is applied, and every count and length in it is checked against the bytes
     * it holds before it sizes an allocation: its CRC only says the sender meant it, and a count or length of two
     * billion in a frame of a few bytes would otherwise have this JVM allocate that much.
     */
    private void applyWrite(ByteBuf p) {
        long lsn = p.readLong();
        int count = p.readInt();
        if (count < 0 || count > p.readableBytes() / MIN_CHANGE_BYTES)
            throw malformedChanges("counts " + Integer.toUnsignedString(count) + " changes in " + p.readableBytes() + " bytes");
        List<Change> changes = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            String table = Frame.readString(p);
            int partition = p.readInt();
            int keyLength = p.readUnsignedShort();
            if (keyLength > p.readableBytes()) throw malformedChanges("has a key of " + keyLength + " bytes where " + p.readableBytes() + " are left");
            byte[] key = new byte[keyLength];
            p.readBytes(key);
            int len = p.readInt();
            if (len < -1 || len > p.readableBytes())
                throw malformedChanges("has a value of " + len + " bytes where " + p.readableBytes() + " are left (-1 is a remove)");
            byte[] value = null;
            if (len >= 0) {
                value = new byte[len];
                p.readBytes(value);
            }
            changes.add(new Change(table, key, value, partition));
        }
        if (p.isReadable()) throw malformedChanges("holds " + p.readableBytes() + " bytes after its " + count + " changes");
        List<TablePartition> written = new ArrayList<>();
        for (Change c : changes) written.add(new TablePartition(c.table(), c.partition()));
        checkRecord("CHANGES", lsn, written);
        store.write(b -> {
            for (Change c : changes) {
                if (c.value() == null) b.remove(c.table(), c.partition(), c.key());
                else b.put(c.table(), c.partition(), c.key(), c.value());
            }
        });
        changesApplied++;
        recorded(lsn, written);
    }

    /**
     * Refuses a record (a write, a table created, a partition destroyed) that cannot come where it does in a sender's
     * stream: the sender logs and delivers each one under its checkpoint read lock and the write locks of the
     * partitions it touches, and each declaration under the write lock, so a record delivered after a declaration was
     * logged after it (a higher LSN), and records of one partition come in WAL order. A record at or below either was
     * logged before what the standby already applied — a replayed or spliced frame — and applying it would put an
     * old value over a newer one. (A frame left out cannot be told: the LSNs of a stream are not consecutive.)
     */
    private void checkRecord(String type, long lsn, List<TablePartition> touched) {
        if (lsn <= declarationLsn) throw outOfOrder(type, lsn, "the declaration before it, at LSN " + declarationLsn);
        for (TablePartition t : touched) {
            Long last = partitionLsn.get(t);
            if (last != null && lsn <= last) throw outOfOrder(type, lsn, "the last record of partition " + t.partition() + " of table " + t.table()
                    + ", at LSN " + last);
        }
    }

    /** Notes an applied record's LSN, for its partitions and as the highest so far. */
    private void recorded(long lsn, List<TablePartition> touched) {
        highestLsn = Math.max(highestLsn, lsn);
        for (TablePartition t : touched) partitionLsn.put(t, lsn);
    }

    /** A declaration (SNAPSHOT, RANK) was logged after every record delivered before it: its LSN is above all of theirs. */
    private void checkDeclaration(String type, long lsn) {
        if (lsn <= highestLsn) throw outOfOrder(type, lsn, "a record before it, at LSN " + highestLsn);
    }

    /** Notes an applied declaration: every later record is above it, which subsumes each partition's last LSN. */
    private void declared(long lsn) {
        declarationLsn = lsn;
        highestLsn = lsn;
        partitionLsn.clear();
    }

    private BackupException outOfOrder(String type, long lsn, String after) {
        return new BackupException("the sender sent a " + type + " frame logged at LSN " + lsn + ", not after " + after + ": a replayed or spliced"
                + " frame, which the standby does not apply (it holds everything up to sender snapshot " + latestSenderSnapshot
                + " and the writes after it)");
    }

    private static BackupException malformedChanges(String what) {
        return new BackupException("the sender sent a malformed CHANGES frame: it " + what + "; nothing of that write was applied");
    }

    /**
     * Declares the standby's snapshot for the sender's, at its rank as far as the standby has levels, makes the
     * declaration durable, then maps the two (durably). In that order: a line that a crash or a power loss could leave
     * naming an id whose declaration was lost would name the standby's own snapshot once the standby, opened as a
     * store, declared one under that id again — and the standby runs {@code LOG_ONLY}, whose declarations a power loss
     * can take, hence the {@link Varve#sync}. After a crash between the two the standby's latest snapshot has no line,
     * and is found as its latest.
     */
    private void declare(long senderId, int rank) {
        long local = store.snapshotNow(Math.min(Math.max(rank, 1), levels));
        store.sync();
        try {
            map.write(ByteBuffer.wrap(StandbyMapDescriptor.line(senderId, local).getBytes(StandardCharsets.US_ASCII)));
            map.force(true);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot append to the standby's snapshot map in " + store.config().path(), e);
        }
        localOf.put(senderId, local);
        if (localOf.size() >= rewriteAt) keepLiveLines(); // a line per entry
    }

    /** The sender raised a snapshot's rank: so does the standby, as far as it has levels, unless it no longer keeps it. */
    private void raise(long senderId, int rank) {
        Long local = localOf.get(senderId);
        if (local == null) return; // followed before this follow began, or its line went with its drop
        try {
            store.rank(local, Math.min(rank, levels));
        } catch (SnapshotNotFoundException dropped) {
            // the standby's own policy let it go
        }
    }

    /**
     * Rewrites the map with the lines of the snapshots the standby still keeps, whole, in one rename: a crash leaves
     * the old map or the new one, each naming only snapshots that were declared under those ids.
     */
    private void keepLiveLines() {
        Set<Long> live = new HashSet<>();
        for (SnapshotInfo s : store.snapshots()) live.add(s.id());
        StringBuilder kept = new StringBuilder(StandbyMapDescriptor.HEADER);
        localOf.values().retainAll(live);
        for (Map.Entry<Long, Long> e : localOf.entrySet()) kept.append(StandbyMapDescriptor.line(e.getKey(), e.getValue()));
        byte[] bytes = kept.toString().getBytes(StandardCharsets.US_ASCII);
        try {
            map.close();
            DurableFiles.replace(FileIOFactory.standard(), mapPath, f -> f.write(ByteBuffer.wrap(bytes), 0)).close();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot rewrite the standby's snapshot map " + mapPath, e);
        } finally {
            map = openMap();
        }
        rewriteAt = Math.max(rewriteMinLines, 2L * localOf.size());
    }

    @Override
    public void close() {
        try {
            if (map != null) map.close(); // null when it could not be opened
        } catch (IOException ignored) {
            // only reads and appends went through it, each forced
        } finally {
            store.close();
        }
    }
}
