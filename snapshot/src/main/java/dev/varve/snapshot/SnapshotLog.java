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

/**
 * Durable declarations, Retro's Start(v): one record per snapshot, appended in id order, in the layout of
 * {@link SnapshotLogDescriptor}. Opening only reads and checks ({@link LogScan}); recovery decides what is
 * durable ({@link #checkDurable}) and only then cuts ({@link #truncate}).
 */
final class SnapshotLog implements AutoCloseable {
    private static final int HEADER = SnapshotLogDescriptor.HEADER_SIZE;
    private static final int RECORD = SnapshotLogDescriptor.RECORD_SIZE;
    private static final int MAX_UNWRITTEN = 1024;

    private final FileIO file;
    /** The records as found at open; null once the log was cut or when it was created. */
    private LogScan scan;
    private long count;
    private boolean dirty;
    /** Records appended and not written yet, back to back as they go into the file: one write at {@link #force}. */
    private final ByteBuffer unwritten = ByteBuffer.allocate(RECORD * MAX_UNWRITTEN).order(ByteOrder.LITTLE_ENDIAN);

    SnapshotLog(FileIOFactory io, Path path, MaplogFile.Missing missing) {
        try {
            if (!io.exists(path)) {
                if (missing == MaplogFile.Missing.CORRUPT) throw new CorruptionException("the snapshot log is missing", path, 0);
                file = DurableFiles.create(io, path, SnapshotLogDescriptor.header());
            } else {
                file = io.open(path, false);
                checkHeader(path); // closes the file when it refuses it
                try {
                    scan = LogScan.of(file, HEADER, RECORD, SnapshotLogDescriptor::intact);
                } catch (RuntimeException e) {
                    // nobody holds a log whose constructor failed: close its file here, or its descriptor stays open
                    Closing.closeAll(e, List.of(file));
                    throw e;
                }
                count = scan.valid;
            }
        } catch (IOException e) {
            throw new StorageException("cannot open the snapshot log: " + e.getMessage(), path, e);
        }
    }

    private void checkHeader(Path path) throws IOException {
        ByteBuffer h = ByteBuffer.allocate(HEADER).order(ByteOrder.LITTLE_ENDIAN);
        try {
            if (file.read(h, 0) < HEADER) throw new CorruptionException("snapshot log header truncated", path, 0);
            SnapshotLogDescriptor.checkHeader(h, path);
        } catch (IOException | RuntimeException e) {
            file.close();
            throw e;
        }
    }

    Path path() {
        return file.path();
    }

    /** Byte offset of record {@code i}. */
    static long offsetOf(long i) {
        return SnapshotLogDescriptor.recordOffset(i);
    }

    /** Records appended, written or not. */
    long records() {
        return count + unwritten.position() / RECORD;
    }

    /** The valid records as found at open, without changing the file. */
    List<SnapshotRecord> load() {
        List<SnapshotRecord> out = new ArrayList<>();
        try {
            ByteBuffer r = ByteBuffer.allocate(RECORD).order(ByteOrder.LITTLE_ENDIAN);
            for (long i = 0; i < count; i++) {
                r.clear();
                if (file.read(r, offsetOf(i)) < RECORD || !SnapshotLogDescriptor.intact(r, 0))
                    throw new CorruptionException("snapshot log record changed since open", file.path(), offsetOf(i));
                out.add(SnapshotLogDescriptor.decode(r, 0));
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
        if (!unwritten.hasRemaining()) writeBuffered(); // bounded heap however fast snapshots are declared
        unwritten.put(SnapshotLogDescriptor.record(s));
    }

    private void writeBuffered() {
        if (unwritten.position() == 0) return;
        unwritten.flip();
        try {
            file.write(unwritten, offsetOf(count));
            count += unwritten.limit() / RECORD;
            dirty = true;
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
            if (file.size() > offsetOf(n)) {
                file.truncate(offsetOf(n));
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
