package dev.varve.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIOFactory;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A part the log needs is there whatever becomes of its creation ahead: a thread the OS refuses to start costs the
 * archiver the creation it did before, never the append that asked for the part.
 */
@Timeout(60)
class NextPartTest {
    @TempDir
    Path dir;

    @Test
    void aThreadTheOsRefusesLeavesTheCreationToTheArchiver() throws IOException {
        ByteBuffer header = ByteBuffer.wrap(new byte[] {1, 2, 3, 4});
        NextPart next = new NextPart(FileIOFactory.standard(), new DescriptorBudget(4), "varve-maplog-parts", r -> new Thread(r) {
            @Override
            public synchronized void start() {
                throw new OutOfMemoryError("unable to create native thread: possibly out of memory or process/resource limits reached");
            }
        });
        try (PartFile first = next.start(dir.resolve("log.4"), header, dir.resolve("log.8"))) {
            assertFalse(Files.exists(dir.resolve("log.8")), "nothing created ahead");
            try (PartFile second = next.start(dir.resolve("log.8"), header, dir.resolve("log.12"))) {
                assertEquals(4, Files.size(dir.resolve("log.8")), "created when needed, header and all");
                assertTrue(Files.exists(first.path()) && Files.exists(second.path()));
            }
        } finally {
            next.close();
        }
        assertFalse(Files.exists(dir.resolve("log.12")) || Files.exists(DurableFiles.tempOf(dir.resolve("log.12"))));
    }
}
