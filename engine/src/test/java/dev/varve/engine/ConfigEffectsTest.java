package dev.varve.engine;

import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the README's configuration table says each setting does, seen from outside: the files a store writes, its
 * threads and its metrics, with every setting observed here away from its default.
 */
@Timeout(120)
@Isolated("counts the threads of every store in the JVM")
class ConfigEffectsTest {
    @TempDir
    Path dir;

    @Test
    void settingsShapeTheFilesThreadsAndCheckpoints() throws Exception {
        long walSegment = (4L << 20) + 4096;
        long archiveSegment = 256 << 10;
        VarveConfig config = FixtureSupport.small(dir.resolve("store")).walSegmentSize(walSegment).archiveSegmentSize(archiveSegment)
                .partitions(3).checkpointThreads(3).name("effects-store").archivePath(dir.resolve("elsewhere"))
                .checkpointFrequency(Duration.ofMillis(50)).build();
        try (Varve store = Varve.open(config)) {
            Table t = store.table("t");
            assertEquals(3, t.partitions(), "partitions: a new table's count");
            byte[] value = new byte[2000];
            for (int round = 0; round < 4; round++) {
                for (int i = 0; i < 500; i++) t.put(utf8("k" + i), value);
                store.snapshotNow();
            }
            long before = store.metrics().checkpointsCompleted();
            while (store.metrics().checkpointsCompleted() < before + 2) { // checkpointFrequency: none requested
                t.put(utf8("k0"), value); // an idle store runs none
                Thread.sleep(10);
            }
            List<String> checkpointThreads = Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
                    .filter(n -> n.startsWith("varve-checkpoint-")).sorted().toList();
            assertEquals(List.of("varve-checkpoint-1 [effects-store]", "varve-checkpoint-2 [effects-store]",
                    "varve-checkpoint-3 [effects-store]"), checkpointThreads, "checkpointThreads, named after name");
        }
        List<Path> wal = files(dir.resolve("store/wal"), "wal-");
        assertFalse(wal.isEmpty());
        for (Path p : wal) assertEquals(walSegment, Files.size(p), "walSegmentSize: " + p);
        List<Path> pagelog = files(dir.resolve("elsewhere"), "pagelog-");
        assertTrue(pagelog.size() > 1, "the archive spans segments: " + pagelog);
        for (Path p : pagelog) assertTrue(Files.size(p) <= archiveSegment, "archiveSegmentSize: " + p + " holds " + Files.size(p));
        assertEquals(3, files(dir.resolve("store/pages"), "t00001-").size(), "one page file per partition");
        assertFalse(Files.exists(dir.resolve("store/archive")), "archivePath: nothing archived under the store");
    }

    private static List<Path> files(Path root, String prefix) throws IOException {
        try (Stream<Path> s = Files.walk(root)) {
            return s.filter(p -> p.getFileName().toString().startsWith(prefix)).toList();
        }
    }
}
