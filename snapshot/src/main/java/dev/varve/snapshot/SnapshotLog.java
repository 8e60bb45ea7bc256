package dev.varve.snapshot;

import dev.varve.core.io.Closeables;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * Durable declarations, Retro's Start(v): one record per snapshot, appended in id order.
 *
 * <pre>
 * header (16): magic (8) | version (4) | crc32c of [0,12) (4)
 * record (48): id (8) | rank (4) | reserved (4) | declaredMillis (8) | start (8) | walLsn (8) | crc32c of [0,40) (4) | reserved (4)
 * </pre>
 * {@code start} is the Maplog position of the snapshot's first mapping, {@code walLsn} where its snaprec sits.
 * Format versions: 1 — initial layout. Opening only reads and checks ({@link LogScan}); recovery decides what is
 * durable ({@link #checkDurable}) and only then cuts ({@link #truncate}).
 */
final class SnapshotLog implements AutoCloseable {
    static final long MAGIC = 0x5641525645534e31L; // "VARVESN1"
    static final int VERSION = 1;
    static final int HEADER = 16;
    static final int RECORD = 48;
    private static final int MAX_UNWRITTEN = 1024;

    private final FileIO file;
    /** The records as found at open; null once the log was cut or when it was created. */
    private LogScan scan;
    private long count;
    private boolean dirty;
    private final List<ByteBuffer> unwritten = new ArrayList<>();

    SnapshotLog(FileIOFactory io, Path path, MaplogFile.Missing missing) {
        try {
            if (!io.exists(path)) {
                if (missing == MaplogFile.Missing.CORRUPT) throw new CorruptionException("the snapshot log is missing", path, 0);
                ByteBuffer h = ByteBuffer.allocate(HEADER).order(ByteOrder.LITTLE_ENDIAN);
                h.putLong(0, MAGIC).putInt(8, VERSION).putInt(12, crc(h.array(), 0, 12));
                file = DurableFiles.create(io, path, h);
            } else {
                file = io.open(path, false);
                checkHeader(path);
                scan = LogScan.of(file, HEADER, RECORD, (b, at) -> b.getInt(at + 40) == crc(b.array(), at, 40));
                count = scan.valid;
            }
        } catch (IOException e) {
            throw new StorageException("cannot open the snapshot log: " + e.getMessage(), path, e);
        }
    }

    private void checkHeader(Path path) throws IOException {
        ByteBuffer h = ByteBuffer.allocate(HEADER).order(ByteOrder.LITTLE_ENDIAN);
        try {
            if (file.read(h, 0) < HEADER || h.getLong(0) != MAGIC || h.getInt(12) != crc(h.array(), 0, 12))
                throw new CorruptionException("snapshot log header is corrupt", path, 0);
            if (h.getInt(8) != VERSION) throw new CorruptionException("unsupported snapshot log version " + h.getInt(8), path, 8);
        } catch (IOException | RuntimeException e) {
            file.close();
            throw e;
        }
    }

    private static int crc(byte[] b, int off, int len) {
        CRC32C c = new CRC32C();
        c.update(b, off, len);
        return (int) c.getValue();
    }

    Path path() {
        return file.path();
    }

    /** Byte offset of record {@code i}. */
    static long offsetOf(long i) {
        return HEADER + i * RECORD;
    }

    /** Records appended, written or not. */
    long records() {
        return count + unwritten.size();
    }

    /** The valid records as found at open, without changing the file. */
    List<SnapshotRecord> load() {
        List<SnapshotRecord> out = new ArrayList<>();
        try {
            ByteBuffer r = ByteBuffer.allocate(RECORD).order(ByteOrder.LITTLE_ENDIAN);
            for (long i = 0; i < count; i++) {
                r.clear();
                if (file.read(r, offsetOf(i)) < RECORD || r.getInt(40) != crc(r.array(), 0, 40))
                    throw new CorruptionException("snapshot log record changed since open", file.path(), offsetOf(i));
                out.add(new SnapshotRecord(r.getLong(0), r.getInt(8), r.getLong(16), r.getLong(24), r.getLong(32)));
            }
        } catch (IOException e) {
            throw new StorageException("cannot read the snapshot log: " + e.getMessage(), file.path(), e);
        }
        return out;
    }

    /** See {@link LogScan#checkDurable}: throws unless the first {@code durable} records are intact (-1: not known). */
    void checkDurable(long durable) {
        if (scan != null) scan.checkDurable(durable);
    }

    /**
     * Appends a record, buffered: declarations need only be durable by the checkpoint whose mark follows them
     * (replay re-declares the others from their snaprecs), so they are written and fsynced at {@link #force}.
     */
    void append(SnapshotRecord s) {
        ByteBuffer r = ByteBuffer.allocate(RECORD).order(ByteOrder.LITTLE_ENDIAN);
        r.putLong(0, s.id()).putInt(8, s.rank()).putLong(16, s.declaredMillis()).putLong(24, s.start()).putLong(32, s.walLsn());
        r.putInt(40, crc(r.array(), 0, 40));
        unwritten.add(r);
        if (unwritten.size() >= MAX_UNWRITTEN) writeBuffered(); // bounded heap however fast snapshots are declared
    }

    private void writeBuffered() {
        try {
            for (ByteBuffer r : unwritten) {
                file.write(r, HEADER + count * RECORD);
                count++;
                dirty = true;
            }
        } catch (IOException e) {
            throw new StorageException("snapshot log append failed: " + e.getMessage(), file.path(), e);
        } finally {
            unwritten.clear();
        }
    }

    /** Keeps the first {@code n} valid records, cutting whatever follows them (recovery, before any append). */
    void truncate(long n) {
        if (n > count) throw new IllegalArgumentException("cannot keep " + n + " of " + count + " snapshot log records");
        unwritten.clear();
        scan = null;
        try {
            if (file.size() > HEADER + n * RECORD) {
                file.truncate(HEADER + n * RECORD);
                file.force();
            }
        } catch (IOException e) {
            throw new StorageException("cannot truncate the snapshot log: " + e.getMessage(), file.path(), e);
        }
        count = n;
    }

    void force() {
        writeBuffered();
        if (!dirty) return;
        try {
            file.force();
        } catch (IOException e) {
            throw new StorageException("snapshot log fsync failed: " + e.getMessage(), file.path(), e);
        }
        dirty = false;
    }

    @Override
    public void close() {
        try {
            writeBuffered();
        } finally {
            Closeables.closeAll(file);
        }
    }
}
