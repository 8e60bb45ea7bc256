package dev.varve.snapshot;

import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import dev.varve.core.io.StorageException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An archive file refused while it is being opened or prepared is closed, not left open: a ranked extent whose
 * temporary file cannot be truncated (a full or failing disk, met by a lazy-ranking copy at a checkpoint), and a
 * snapshot log or a Pagelog whose records cannot be scanned (an IO error at open). Each used to keep its descriptors.
 */
@Timeout(60)
class ArchiveFileOpenFailureTest {
    @TempDir
    Path dir;

    /** 16 records of 4 KiB pages a Pagelog segment. */
    private static final long SEGMENT = 16L * (4096 + PagelogDescriptor.RECORD_HEADER_SIZE) + PagelogDescriptor.HEADER_SIZE;

    private final Set<FileIO> open = ConcurrentHashMap.newKeySet();
    private volatile boolean failTruncate;
    private volatile boolean failSize;
    /** Reads past a file's first bytes fail (its header reads fine). */
    private volatile boolean failReadsPastHeader;

    @Test
    void aRankedExtentThatCannotBePreparedClosesItsFile() {
        failTruncate = true;
        for (int i = 0; i < 5; i++) {
            long snapshot = 10 + i;
            StorageException e = assertThrows(StorageException.class, () -> new RankedExtent.Writer(io(), dir, snapshot, 2, 2, 4096));
            assertTrue(e.getMessage().contains("cannot create a ranked extent"), e.getMessage());
            assertEquals(Set.of(), open, "the refused extent file is still open");
        }
    }

    @Test
    void aSnapshotLogThatCannotBeScannedClosesItsFile() {
        Path path = dir.resolve("snapshots.log");
        new SnapshotLog(io(), path, MaplogFile.Missing.CREATE).close();
        assertEquals(Set.of(), open);
        failSize = true; // the header reads fine; the scan of the records behind it fails
        for (int i = 0; i < 5; i++) {
            assertThrows(StorageException.class, () -> new SnapshotLog(io(), path, MaplogFile.Missing.CORRUPT));
            assertEquals(Set.of(), open, "the refused snapshot log is still open");
        }
    }

    @Test
    void aPagelogWhoseRecordsCannotBeScannedClosesItsSegments() {
        ByteBuffer image = ByteBuffer.allocateDirect(4096);
        try (Pagelog log = new Pagelog(io(), dir, 4096, SEGMENT)) {
            for (int i = 0; i < 40; i++) log.append(i, 0, 1, image, 0); // three segments
            log.force();
        }
        assertEquals(Set.of(), open);
        failReadsPastHeader = true; // the segments' headers read fine; the scan of their records fails
        for (int i = 0; i < 5; i++) {
            assertThrows(StorageException.class, () -> new Pagelog(io(), dir, 4096, SEGMENT));
            assertEquals(Set.of(), open, "the refused Pagelog's segments are still open");
        }
    }

    /** The real file system, with the failures the test asks for, keeping every file opened and not yet closed in {@link #open}. */
    private FileIOFactory io() {
        return new ForwardingFileIOFactory() {
            @Override
            public FileIO open(Path file, boolean create) throws IOException {
                FileIO f = new Watched(delegate.open(file, create));
                open.add(f);
                return f;
            }
        };
    }

    private final class Watched extends ForwardingFileIO {
        Watched(FileIO delegate) {
            super(delegate);
        }

        @Override
        public int read(ByteBuffer dst, long position) throws IOException {
            if (failReadsPastHeader && position >= PagelogDescriptor.HEADER_SIZE) throw new IOException("injected IO error");
            return delegate.read(dst, position);
        }

        @Override
        public long size() throws IOException {
            if (failSize) throw new IOException("injected IO error");
            return delegate.size();
        }

        @Override
        public void truncate(long size) throws IOException {
            if (failTruncate) throw new IOException("No space left on device (injected)");
            delegate.truncate(size);
        }

        @Override
        public void close() throws IOException {
            open.remove(this);
            delegate.close();
        }
    }
}
