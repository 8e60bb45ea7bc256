package dev.varve.checkpoint;

import dev.varve.config.RecoveryCompression;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import dev.varve.core.io.StorageException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A recovery file that cannot be prepared (its truncation fails: a full or failing disk) is refused with its file
 * closed. The writer used to keep it open: each checkpoint thread of each failed checkpoint left a descriptor on a
 * temporary file that the next open deletes, so the disk space stayed held as long as the process ran.
 */
@Timeout(60)
class RecoveryFileWriterOpenFailureTest {
    @TempDir
    Path dir;

    @Test
    void aWriterThatCannotPrepareItsFileClosesIt() {
        Set<FileIO> open = ConcurrentHashMap.newKeySet();
        FileIOFactory io = new ForwardingFileIOFactory() {
            @Override
            public FileIO open(Path file, boolean create) throws IOException {
                FileIO f = new RefusingTruncation(delegate.open(file, create), open);
                open.add(f);
                return f;
            }
        };
        for (int i = 0; i < 10; i++) {
            Path path = dir.resolve("cp-" + i + "-recovery-00.bin");
            StorageException e = assertThrows(StorageException.class,
                    () -> new RecoveryFileWriter(io, path, 1, 4096, PageCodec.of(RecoveryCompression.DISABLED), p -> 0L));
            assertTrue(e.getMessage().contains("cannot create recovery file"), e.getMessage());
            assertEquals(Set.of(), open, "the refused recovery file is still open");
        }
    }

    /** A file whose truncation fails as on a full disk, and which leaves {@code open} when closed. */
    private static final class RefusingTruncation extends ForwardingFileIO {
        private final Set<FileIO> open;

        RefusingTruncation(FileIO delegate, Set<FileIO> open) {
            super(delegate);
            this.open = open;
        }

        @Override
        public void truncate(long size) throws IOException {
            throw new IOException("No space left on device (injected)");
        }

        @Override
        public void close() throws IOException {
            open.remove(this);
            delegate.close();
        }
    }
}
