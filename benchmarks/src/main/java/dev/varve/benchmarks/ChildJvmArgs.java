package dev.varve.benchmarks;

import java.util.ArrayList;
import java.util.List;

/**
 * Extra JVM arguments a job passes to the child JVMs it starts, read from a system property: separated by white space,
 * with a placeholder standing for the child (its node or recovery mode), so that each child can, say, record to a
 * JFR file of its own.
 */
final class ChildJvmArgs {

    private ChildJvmArgs() {
    }

    /** The arguments of {@code property} (none when unset or blank), each {@code placeholder} replaced by {@code child}. */
    static List<String> fromProperty(String property, String placeholder, String child) {
        List<String> args = new ArrayList<>();
        for (String arg : System.getProperty(property, "").split("\\s+")) {
            if (!arg.isEmpty()) args.add(arg.replace(placeholder, child));
        }
        return args;
    }
}
