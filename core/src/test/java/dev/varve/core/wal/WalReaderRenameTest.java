package dev.varve.core.wal;

import static dev.varve.core.wal.WalTestSupport.SEGMENT_SIZE;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.ForwardingFileIOFactory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A reader looking for the segment being written, which still has its temporary name, while the WAL gives it its
 * segment name (WalSegmentCloser): the rename is made to land between the reader's lookups, at each point. The reader
 * reads the segment under whichever name it then has, never reports it missing.
 */
@Timeout(60)
class WalReaderRenameTest {
    private static final int RECORDS = 5;

    @TempDir
    Path dir;

    @Test
    void aSegmentNamedRightAfterTheReaderFoundItsTemporaryFileIsRead() throws IOException {
        assertReadsAll(renamingOnLookupOf(WalSegment.tempPath(dir, 0)));
    }

    @Test
    void aSegmentNamedRightAfterTheReaderMissedItsNameIsRead() throws IOException {
        assertReadsAll(renamingOnLookupOf(dir.resolve(WalSegmentDescriptor.fileName(0))));
    }

    /** Writes segment 0, gives it back its temporary name, and reads it through {@code io}. */
    private void assertReadsAll(FileIOFactory io) throws IOException {
        long end;
        try (Wal wal = Wal.open(dir, FileIOFactory.standard(), SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            for (int i = 0; i < RECORDS; i++) wal.append(2, ByteBuffer.wrap(new byte[100 + i]));
            end = wal.position();
        }
        Files.move(dir.resolve(WalSegmentDescriptor.fileName(0)), WalSegment.tempPath(dir, 0));
        int read = 0;
        try (WalReader reader = new WalReader(io, dir, SEGMENT_SIZE, WalSegmentDescriptor.firstLsn(0, SEGMENT_SIZE), end)) {
            while (reader.next()) read++;
        }
        assertEquals(RECORDS, read);
    }

    /** The real file system, but the first lookup of {@code watched} is answered, then segment 0 gets its name. */
    private ForwardingFileIOFactory renamingOnLookupOf(Path watched) {
        return new ForwardingFileIOFactory() {
            private boolean renamed;

            @Override
            public boolean exists(Path file) {
                boolean exists = delegate.exists(file);
                if (file.equals(watched) && !renamed) {
                    renamed = true;
                    try {
                        delegate.atomicMove(WalSegment.tempPath(dir, 0), dir.resolve(WalSegmentDescriptor.fileName(0)));
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                }
                return exists;
            }
        };
    }
}
