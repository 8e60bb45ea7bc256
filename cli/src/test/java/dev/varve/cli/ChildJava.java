package dev.varve.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The command that runs a class of the test class path (the tool's {@link Main}, a fixture writer) in a child JVM.
 * Each child lives a second or two, so it is started as a short-lived tool should be: the C1 compiler only (C2 spends
 * more CPU compiling than such a run gains), the serial collector (no GC threads to start) and a heap sized for what
 * the tool holds; direct memory defaults to the heap's size, room for the tool's store and a new one it writes.
 */
final class ChildJava {
    private ChildJava() {
    }

    static List<String> command(Class<?> main, String... args) {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m", "-cp", System.getProperty("java.class.path"), main.getName()));
        cmd.addAll(List.of(args));
        return cmd;
    }
}
