/* blocked by the ad-block of this browser */
