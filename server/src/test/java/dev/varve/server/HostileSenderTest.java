package dev.varve.server;

import dev.varve.config.RecoveryMode;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageChecksum;
import dev.varve.engine.SnapshotImage;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The receiver ({@link SnapshotBackup}) against a sender that is not a Varve server, or a broken one: a
 * {@link FakeSender} speaking the wire format with a real snapshot's pages, and sending what a Varve server never
 * sends. Whatever it sends, the receiver writes nothing outside its target, allocates no more than the bytes it was
 * sent call for, fails with a message that says what was wrong, and leaves the target unfinished (never a store that
 * opens with wrong data).
 */
@Timeout(120)
class HostileSenderTest {
    private static final String MODE = RecoveryMode.CHECKPOINT_RECOVERY_FILE.name();

    @TempDir
    Path dir;
    private Path target;
    private Varve source;
    private long snapshot;

    @BeforeEach
    void source() {
        target = dir.resolve("target");
        source = Varve.open(ShippingTest.config(dir.resolve("source"), RecoveryMode.CHECKPOINT_RECOVERY_FILE));
        Table t = source.table("t");
        for (int i = 0; i < 2000; i++) t.put(("key-" + i).getBytes(StandardCharsets.UTF_8), new byte[100 + i % 300]);
        snapshot = source.snapshotNow();
    }

    @org.junit.jupiter.api.AfterEach
    void closeSource() {
        source.close();
    }

    private SnapshotBackup backup() {
        return new SnapshotBackup(sender.address(), snapshot, target).idleTimeout(Duration.ofSeconds(5));
    }

    private FakeSender sender;

    @BeforeEach
    void sender() throws Exception {
        sender = new FakeSender();
    }

    @org.junit.jupiter.api.AfterEach
    void closeSender() throws Exception {
        sender.close();
    }

    private static CompletableFuture<BackupResult> start(SnapshotBackup backup) {
        return CompletableFuture.supplyAsync(backup::run);
    }

    /** The failure {@code run} ends with, which must be a {@link BackupException}. */
    private static String failure(CompletableFuture<BackupResult> run) throws Exception {
        ExecutionException e = assertThrows(ExecutionException.class, () -> run.get(60, TimeUnit.SECONDS));
        assertInstanceOf(BackupException.class, e.getCause(), () -> "a BackupException, not " + e.getCause());
        return e.getCause().getMessage();
    }

    private void assertUnfinished() {
        IllegalStateException refused = assertThrows(IllegalStateException.class,
                () -> Varve.open(ShippingTest.config(target, RecoveryMode.CHECKPOINT_RECOVERY_FILE)));
        assertTrue(refused.getMessage().contains("unfinished transfer"), refused.getMessage());
    }

    /** A page of {@code image} (its first) re-stamped to claim to be page {@code index} of file {@code fileId}, CRC and all. */
    private static ByteBuffer forgedPage(SnapshotImage image, int fileId, int index) {
        ByteBuffer page = ByteBuffer.allocateDirect(image.pageSize());
        image.next(page);
        page.flip();
        page.duplicate().order(ByteOrder.LITTLE_ENDIAN).putLong(PageHeader.PAGE_ID_OFFSET, PageId.of(fileId, index));
        PageChecksum.stamp(page, 0, image.pageSize());
        return page;
    }

    // ------------------------------------------------------------------ bounds before allocation

    /**
     * A PAGES frame whose page claims an index far beyond anything sent (its CRC and page id right) would have the
     * receiver write at an offset of terabytes (a sparse file that size in the target) and size its record of written
     * pages by the index (a 16 KiB frame made the receiver's heap take 32 MiB here, 256 MiB at the largest index):
     * pages come file by file, in order, so the first page of a file that is not the next one is refused as it arrives.
     */
    @Test
    void aPageFarBeyondTheFilesNextIsRefusedBeforeItIsWritten() throws Exception {
        CompletableFuture<BackupResult> run = start(backup());
        try (SnapshotImage image = SnapshotImage.open(source, snapshot)) {
            sender.accept();
            sender.header(image, 1, MODE, 64L << 20);
            sender.tables(image, new ImageDigest());
            sender.pages(0, 1 << 28, forgedPage(image, 0, 1 << 28), image.pageSize());
            String m = failure(run);
            assertTrue(m.contains("page 268435456") && m.contains("t00000-p00000"), m);
        }
        assertUnfinished();
        try (Stream<Path> files = Files.walk(target)) { // no page file was extended to where the forged page claimed to go
            for (Path p : files.filter(p -> p.getFileName().toString().endsWith(".page")).toList())
                assertTrue(Files.size(p) < (1L << 20), p + " is " + Files.size(p) + " bytes");
        }
    }
}
