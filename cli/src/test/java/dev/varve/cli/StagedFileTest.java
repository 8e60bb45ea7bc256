package dev.varve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@link StagedFile}: the target's name is taken only while it is free, whoever else is publishing to it. */
@Timeout(value = 1, unit = TimeUnit.MINUTES)
class StagedFileTest {
    @TempDir
    Path tmp;

    /**
     * Two runs that both found the name free (as two dumps started together do) publish at once: one gets the name,
     * the other is told it exists, and the file is the winner's, whole. The rename used before replaced an existing
     * name, so both succeeded and the first run's file was silently replaced by the second's.
     */
    @Test
    void ofTwoRunsPublishingOneNameAtOnceOnlyOneTakesIt() throws Exception {
        Path target = tmp.resolve("same.dump");
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            for (int round = 0; round < 20; round++) {
                Files.deleteIfExists(target);
                CyclicBarrier publish = new CyclicBarrier(2);
                List<Future<String>> runs = new ArrayList<>();
                for (String content : List.of("first run " + round, "second run " + round)) {
                    runs.add(pool.submit(() -> {
                        try (StagedFile f = StagedFile.create(target)) {
                            f.stream().write(content.getBytes(StandardCharsets.UTF_8)); // not closed: that closes the file before its commit
                            publish.await(30, TimeUnit.SECONDS); // both are whole and about to take the name
                            try {
                                f.commit();
                                return content;
                            } catch (FileAlreadyExistsException e) {
                                return null;
                            }
                        }
                    }));
                }
                List<String> won = new ArrayList<>();
                for (Future<String> r : runs) {
                    String content = r.get(30, TimeUnit.SECONDS);
                    if (content != null) won.add(content);
                }
                assertEquals(1, won.size(), "round " + round + ": runs that published " + won);
                assertEquals(won.get(0), Files.readString(target), "round " + round);
                try (Stream<Path> s = Files.list(tmp)) {
                    assertEquals(List.of(target), s.toList(), "round " + round + ": the loser's temporary file is removed");
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** A name that exists by the time of the commit is left as it is; the staged content goes with its temporary file. */
    @Test
    void aNameTakenMeanwhileIsNotReplaced() throws IOException {
        Path target = tmp.resolve("taken");
        try (StagedFile f = StagedFile.create(target)) {
            f.stream().write(new byte[]{1, 2, 3});
            Files.writeString(target, "someone else's");
            try {
                f.commit();
                throw new AssertionError("the commit replaced " + target);
            } catch (FileAlreadyExistsException expected) {
                assertTrue(expected.getFile().endsWith("taken"), expected.getFile());
            }
        }
        assertEquals("someone else's", Files.readString(target));
        try (Stream<Path> s = Files.list(tmp)) {
            assertEquals(List.of(target), s.toList());
        }
    }
}
