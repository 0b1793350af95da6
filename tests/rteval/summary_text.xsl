<?xml version="1.0"?>
<!--
  latscope's own stylesheet (MIT or Apache-2.0, as latscope), written for the
  tests: it reads a summary.xml through the element paths rteval 3.10's
  rteval_text.xsl reads (/rteval/run_info, SystemInfo/uname, SystemInfo/Kernel/
  ClockSource, SystemInfo/CPUtopology, loads, Measurements/cyclictest/system and
  core sorted by @id, each statistics element) and prints its labels ("CPU core",
  "Samples:", "Max:", ...). It is not rteval's file: tests/suite/slow/rteval_report.rs
  also runs rteval's own rteval_text.xsl when one is installed.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="text" encoding="UTF-8"/>

  <xsl:template match="/rteval">
    <xsl:text>rteval (v</xsl:text><xsl:value-of select="@version"/><xsl:text>) report&#10;</xsl:text>
    <xsl:text>Test run: </xsl:text>
    <xsl:value-of select="run_info/date"/><xsl:text> </xsl:text><xsl:value-of select="run_info/time"/>
    <xsl:text>&#10;Run time: </xsl:text>
    <xsl:value-of select="run_info/@days"/><xsl:text> days </xsl:text>
    <xsl:value-of select="run_info/@hours"/><xsl:text>h </xsl:text>
    <xsl:value-of select="run_info/@minutes"/><xsl:text>m </xsl:text>
    <xsl:value-of select="run_info/@seconds"/><xsl:text>s&#10;</xsl:text>
    <xsl:text>Kernel: </xsl:text>
    <xsl:value-of select="SystemInfo/uname/kernel"/>
    <xsl:if test="SystemInfo/uname/kernel/@is_RT = '1'"> (RT enabled)</xsl:if>
    <xsl:text>&#10;Clocksource: </xsl:text>
    <xsl:value-of select="SystemInfo/Kernel/ClockSource/source[@current='1']"/>
    <xsl:text>&#10;CPU cores: </xsl:text>
    <xsl:value-of select="SystemInfo/CPUtopology/@num_cpu_cores"/>
    <xsl:text> (online: </xsl:text>
    <xsl:value-of select="SystemInfo/CPUtopology/@num_cpu_cores_online"/>
    <xsl:text>)&#10;Loads: </xsl:text>
    <xsl:choose>
      <xsl:when test="loads">
        <xsl:value-of select="loads/@loads"/><xsl:text> loads run on cores </xsl:text>
        <xsl:value-of select="loads/@loadcpus"/>
      </xsl:when>
      <xsl:otherwise>none</xsl:otherwise>
    </xsl:choose>
    <xsl:text>&#10;Measurement: measurement threads run on cores </xsl:text>
    <xsl:value-of select="Measurements/@measurecpus"/>
    <xsl:text>&#10;</xsl:text>
    <xsl:for-each select="Measurements/cyclictest">
      <xsl:text>System: </xsl:text><xsl:value-of select="system/@description"/><xsl:text>&#10;</xsl:text>
      <xsl:apply-templates select="system/statistics"/>
      <xsl:for-each select="core">
        <xsl:sort select="@id" data-type="number"/>
        <xsl:text>CPU core </xsl:text><xsl:value-of select="@id"/>
        <xsl:text> Priority: </xsl:text><xsl:value-of select="@priority"/><xsl:text>&#10;</xsl:text>
        <xsl:apply-templates select="statistics"/>
      </xsl:for-each>
    </xsl:for-each>
  </xsl:template>

  <xsl:template match="statistics">
    <xsl:text>  Samples: </xsl:text><xsl:value-of select="samples"/><xsl:text>&#10;</xsl:text>
    <xsl:for-each select="mean|median|mode|range|minimum|maximum|mean_absolute_deviation|standard_deviation">
      <xsl:text>  </xsl:text>
      <xsl:choose>
        <xsl:when test="name() = 'minimum'">Min</xsl:when>
        <xsl:when test="name() = 'maximum'">Max</xsl:when>
        <xsl:otherwise><xsl:value-of select="name()"/></xsl:otherwise>
      </xsl:choose>
      <xsl:text>: </xsl:text><xsl:value-of select="."/><xsl:value-of select="@unit"/><xsl:text>&#10;</xsl:text>
    </xsl:for-each>
  </xsl:template>
</xsl:stylesheet>
