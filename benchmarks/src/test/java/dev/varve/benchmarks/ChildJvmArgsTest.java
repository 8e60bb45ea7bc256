package dev.varve.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The extra JVM arguments a benchmark job hands its child JVMs for profiling. */
class ChildJvmArgsTest {

    private static final String PROPERTY = "varve.bench.childJvmArgsTest";

    @AfterEach
    void clear() {
        System.clearProperty(PROPERTY);
    }

    @Test
    void unsetOrBlankGivesNoArguments() {
        assertEquals(List.of(), ChildJvmArgs.fromProperty(PROPERTY, "{mode}", "WAL_PHYSICAL"));
        System.setProperty(PROPERTY, "  \t ");
        assertEquals(List.of(), ChildJvmArgs.fromProperty(PROPERTY, "{mode}", "WAL_PHYSICAL"));
    }

    @Test
    void splitsOnWhiteSpaceAndNamesTheChildInEveryArgument() {
        System.setProperty(PROPERTY, " -XX:StartFlightRecording=filename=/tmp/{mode}.jfr \t-Dx={mode}-{mode}  -Xss1m ");
        assertEquals(List.of("-XX:StartFlightRecording=filename=/tmp/CHECKPOINT_RECOVERY_FILE.jfr",
                        "-Dx=CHECKPOINT_RECOVERY_FILE-CHECKPOINT_RECOVERY_FILE", "-Xss1m"),
                ChildJvmArgs.fromProperty(PROPERTY, "{mode}", "CHECKPOINT_RECOVERY_FILE"));
    }
}
