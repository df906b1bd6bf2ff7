package io.xdsproxy.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.regex.Matcher;
import org.junit.jupiter.api.Test;

/** What the bench reads of a JVM's own reports, in the formats of each Java it runs on. */
class JavaProcessTest {

  @Test
  void theHeapInUseIsReadFromGcHeapInfoOfJava17AndOfJava25() {
    // jcmd PID GC.heap_info of a G1 heap, Java 17 then Temurin 25.
    String java17 =
        "garbage-first heap   total 393216K, used 10967K [0x0000000687400000, 0x0000000800000000)\n";
    String java25 =
        "garbage-first heap   total reserved 6172672K, committed 393216K, used 10967K"
            + " [0x0000000687400000, 0x0000000800000000)\n";
    for (String report : new String[] {java17, java25}) {
      Matcher used = JavaProcess.HEAP_USED.matcher(report);
      assertThat(used.find()).as(report).isTrue();
      assertThat(used.group(1)).isEqualTo("10967");
    }
  }
}
